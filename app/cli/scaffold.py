"""`agentd new app NAME`: a new app folder that runs offline, with its README and its test.

The files are templates shipped in the package (`app/cli/templates/app/*.tmpl`, `$name` and
`$dir` substituted with `string.Template`), so an installed agentd scaffolds the same app as a
source tree does.
"""

import re
from importlib import resources
from pathlib import Path
from string import Template

import click

#: What the app registry loads (`app.invocations.registry`) and a Python package name allows.
APP_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,127}")
TEMPLATES = ("__init__.py", "agent.py", "README.md", "test_agent.py")


@click.group()
def new() -> None:
    """Create things from templates."""


@new.command(name="app")
@click.argument("name")
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("agents"),
    show_default=True,
    help="The agents folder (AGENTD_AGENTS_DIR) to create the app in.",
)
def new_app(name: str, directory: Path) -> None:
    """Scaffold the app NAME: an agent with one tool and an offline model, a README and a test.

    `agentd run NAME "hello"` then answers at once, with no server and no API key.
    """
    if not APP_NAME.fullmatch(name):
        raise click.BadParameter(
            "an app name is a letter then letters, digits or underscores (a Python package "
            "name), e.g. my_agent.",
            param_hint="NAME",
        )
    target = directory / name
    if target.exists():
        raise click.BadParameter(
            f"{target} exists already: choose another name.", param_hint="NAME"
        )
    templates = resources.files("app.cli") / "templates" / "app"
    target.mkdir(parents=True)
    for file_name in TEMPLATES:
        text = (templates / f"{file_name}.tmpl").read_text(encoding="utf-8")
        rendered = Template(text).substitute(name=name, dir=directory.as_posix())
        (target / file_name).write_text(rendered, encoding="utf-8")
    click.echo(f"created {target}/ ({', '.join(TEMPLATES)})")
    hint = "" if directory == Path("agents") else f"AGENTD_AGENTS_DIR={directory} "
    click.echo(f'try it: {hint}agentd run {name} "hello"')
