# Source: ADK docs, "Agent activity logging" > "Activity logging with plugins" >
#   "Console logging with LoggingPlugin", https://google.github.io/adk-docs/observability/logging/
# Changed: only the imports (`google.adk` -> `app`). The snippet uses a `root_agent` defined
# elsewhere: the test supplies one (the Plugins page's hello_world agent) before running it.
from app.apps import App
from app.plugins import LoggingPlugin

app = App(
    name="my_app",
    root_agent=root_agent,
    plugins=[LoggingPlugin()],
)
