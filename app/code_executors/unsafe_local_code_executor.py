"""UnsafeLocalCodeExecutor: runs model-written Python on the agentd host. Off unless enabled.

Whatever the model writes runs with agentd's own user, files and network: a prompt injection in
any input the model reads becomes code execution on the server. Construction therefore fails
unless `AGENTD_ALLOW_LOCAL_CODE_EXECUTION=true`. Unlike ADK's, which calls `exec` inside the
server process, the code runs in a separate Python process (isolated mode, a fresh temporary
working folder, a wall-clock limit of `AGENTD_CODE_EXECUTION_TIMEOUT_SECONDS`), so it cannot
read or change agentd's memory or block its event loop; it is still not a sandbox.
"""

import asyncio
import contextlib
import sys
import tempfile
from typing import Any

from app.code_executors.base_code_executor import BaseCodeExecutor
from app.code_executors.code_execution_utils import CodeExecutionInput, CodeExecutionResult
from app.contexts.invocation import InvocationContext
from app.errors import LocalCodeExecutionDisabled
from app.settings import get_settings


class UnsafeLocalCodeExecutor(BaseCodeExecutor):
    """Runs code in a local Python subprocess (only with the explicit opt-in setting)."""

    def model_post_init(self, context: Any, /) -> None:  # noqa: ARG002 - pydantic hook
        """Refuse to exist unless the operator opted in."""
        if not get_settings().allow_local_code_execution:
            raise LocalCodeExecutionDisabled(
                "UnsafeLocalCodeExecutor runs model-written code on this host; set "
                "AGENTD_ALLOW_LOCAL_CODE_EXECUTION=true to allow it (see the README's risks)."
            )

    async def execute_code(
        self, invocation_context: InvocationContext, code_execution_input: CodeExecutionInput
    ) -> CodeExecutionResult:
        """Run the code; stdout and stderr as text (a timeout is reported in stderr)."""
        del invocation_context
        timeout = get_settings().code_execution_timeout_seconds
        with tempfile.TemporaryDirectory(prefix="agentd-code-") as folder:
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-I",
                "-c",
                code_execution_input.code,
                cwd=folder,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
            try:
                stdout, stderr = await asyncio.wait_for(process.communicate(), timeout)
            except (TimeoutError, asyncio.CancelledError) as stop:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await process.wait()
                if isinstance(stop, asyncio.CancelledError):
                    raise
                return CodeExecutionResult(stderr=f"Code execution timed out after {timeout} s.")
        return CodeExecutionResult(
            stdout=stdout.decode("utf-8", errors="replace"),
            stderr=stderr.decode("utf-8", errors="replace"),
        )
