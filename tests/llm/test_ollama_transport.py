"""The ollama client over aiohttp keeps httpx's meaning for each way a connection fails.

The real `ollama.AsyncClient` with `OllamaTransport`, against the loopback LLM (or a closed port).
"""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
from pathlib import Path

import httpx
import pytest
import trustme

from bot.llm.backend import BackendError, ModelErrorKind
from bot.llm.ollama_backend import OllamaBackend
from bot.llm.ollama_transport import OllamaTransport, split_lines
from bot.llm.pacing import ReadPace, reading_at
from bot.llm.types import Message
from tests.fakes.llm_server import Drop, FakeLLMServer, Hang, Text

QUESTION: list[Message] = [{"role": "user", "content": "hello"}]


async def stream_text(backend: OllamaBackend) -> str:
    return "".join([delta.text async for delta in backend.stream("ollama/m", QUESTION, None, 64)])


async def stream_error(backend: OllamaBackend) -> BackendError:
    try:
        await stream_text(backend)
    except BackendError as exc:
        return exc
    raise AssertionError("the stream did not fail")


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_the_backend_streams_through_one_aiohttp_transport() -> None:
    async with FakeLLMServer() as llm:
        backend = OllamaBackend(llm.url, timeout=5)
        llm.script(Text("one two three", chunks=3), Text("four five", chunks=2))
        assert await stream_text(backend) == "one two three"
        assert await stream_text(backend) == "four five"
        assert isinstance(backend._client._client._transport, OllamaTransport)
        await backend.close()


async def test_a_refused_connection_is_unavailable_not_a_timeout() -> None:
    backend = OllamaBackend(f"http://127.0.0.1:{closed_port()}", timeout=5)
    error = await stream_error(backend)
    assert error.kind is ModelErrorKind.UNREACHABLE
    assert "not reachable" in str(error)
    await backend.close()


async def test_a_dropped_stream_is_an_interrupted_answer() -> None:
    async with FakeLLMServer() as llm:
        backend = OllamaBackend(llm.url, timeout=5)
        llm.script(Drop(after_chunks=1))
        error = await stream_error(backend)
        # Part of the answer came: sending it again would bill it twice (not retried).
        assert error.kind is ModelErrorKind.INTERRUPTED and not error.transient
        assert "broke off" in str(error)
        await backend.close()


async def test_a_stalled_stream_is_a_timeout() -> None:
    async with FakeLLMServer() as llm:
        backend = OllamaBackend(llm.url, timeout=0.3)
        llm.script(Hang(after_chunks=1))
        error = await stream_error(backend)
        # Part of the answer came before the stall: not sent again (it would bill twice).
        assert error.kind is ModelErrorKind.TIMEOUT and not error.transient
        assert "did not answer m within 0.3 s" in str(error) and "LLM_TIMEOUT" in str(error)
        await backend.close()


async def test_lines_split_only_at_newlines_so_unicode_separators_stay_in_the_text() -> None:
    # Go's encoder (Ollama's) leaves U+0085 raw in JSON strings; str.splitlines cuts there.
    text = "a\u2028b c\x85d e\u2029f \x1cg"
    async with FakeLLMServer() as llm:
        backend = OllamaBackend(llm.url, timeout=5)
        llm.script(Text(text, chunks=4))
        assert await stream_text(backend) == text
        await backend.close()


def test_split_lines_joins_pieces_and_keeps_the_unfinished_tail() -> None:
    pending: list[bytes] = []
    assert split_lines(pending, b'{"a":') == []
    assert split_lines(pending, b' 1}\r\n{"b": 2}\n\n{"c"') == [b'{"a": 1}', b'{"b": 2}', b""]
    assert pending == [b'{"c"']
    assert split_lines(pending, b": 3}") == []
    assert split_lines(pending, b"\n") == [b'{"c": 3}']
    assert pending == []
    # A multi-byte character cut between chunks is whole again in its line.
    word = "語".encode()
    assert split_lines(pending, b"x" + word[:1]) == []
    assert split_lines(pending, word[1:] + b"\n")[0].decode() == "x語"


WORDS = " ".join(f"w{i}" for i in range(30))  # 30 pieces, one per word


async def raw_reads(
    url: str, pace: ReadPace, *, pace_after_first: float
) -> tuple[list[bytes], float]:
    """The body of one streamed chat, read by our transport under `pace`, one item per read;
    the pace is set to `pace_after_first` once the first read is in. Also the seconds taken."""
    loop = asyncio.get_running_loop()
    reads: list[bytes] = []
    async with httpx.AsyncClient(transport=OllamaTransport()) as client:
        with reading_at(pace):
            started = loop.time()
            request = {"model": "m", "messages": QUESTION, "stream": True}
            async with client.stream("POST", f"{url}/api/chat", json=request) as response:
                async for chunk in response.aiter_raw():
                    reads.append(chunk)
                    pace.seconds = pace_after_first
            return reads, loop.time() - started


def streamed_text(reads: list[bytes]) -> str:
    lines = b"".join(reads).decode().splitlines()
    return "".join(json.loads(line)["message"]["content"] for line in lines if line)


async def test_a_paced_stream_gathers_its_chunks_into_a_few_reads() -> None:
    async with FakeLLMServer() as llm:
        llm.script(Text(WORDS, delay=0.02))  # 30 frames 20 ms apart, then the final one
        reads, took = await raw_reads(llm.url, ReadPace(0.0), pace_after_first=0.2)
        assert streamed_text(reads) == WORDS
        # The first read was not held back; every later one waited 0.2 s and then took what
        # had come (a wait's data may arrive in two reads). Unpaced, each frame is a read.
        assert json.loads(reads[0].splitlines()[0])["message"]["content"] == "w0 "
        assert len(reads) <= 2 * (took / 0.2 + 1), (len(reads), took)
        assert len(reads) < 31


async def test_an_unpaced_stream_is_read_as_it_comes() -> None:
    async with FakeLLMServer() as llm:
        llm.script(Text(WORDS, delay=0.02))
        reads, took = await raw_reads(llm.url, ReadPace(0.0), pace_after_first=0.0)
        assert streamed_text(reads) == WORDS
        assert len(reads) > 2 * (took / 0.2 + 1), (len(reads), took)


async def test_a_stream_that_stalls_while_paced_is_still_a_timeout() -> None:
    # Pausing the socket stops aiohttp's read timer; resuming must start it again.
    async with FakeLLMServer() as llm:
        backend = OllamaBackend(llm.url, timeout=0.3)
        llm.script(Hang(after_chunks=2))
        with reading_at(ReadPace(0.2)):
            error = await stream_error(backend)
        assert error.kind is ModelErrorKind.TIMEOUT
        await backend.close()


async def test_the_final_line_is_passed_on_before_the_body_ends_and_a_lost_end_is_no_error() -> (
    None
):
    async with FakeLLMServer() as llm:
        backend = OllamaBackend(llm.url, timeout=5)
        llm.script(Drop(after_chunks=2, text="whole answer", after_final=True))
        deltas = [delta async for delta in backend.stream("ollama/m", QUESTION, None, 64)]
        assert "".join(d.text for d in deltas) == "whole answer"
        assert deltas[-1].done and deltas[-1].usage.completion_tokens is not None
        await backend.close()


async def test_an_https_server_is_trusted_as_httpx_would_trust_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # httpx's own transport trusts SSL_CERT_FILE (else certifi's CAs); ours does the same.
    authority = trustme.CA()
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert("127.0.0.1").configure_cert(server_tls)
    bundle = tmp_path / "ca.pem"
    authority.cert_pem.write_to_path(str(bundle))
    async with FakeLLMServer(tls=server_tls) as llm:
        assert llm.url.startswith("https://")
        untrusted = OllamaBackend(llm.url, timeout=5)
        untrusting = await stream_error(untrusted)
        assert untrusting.kind is ModelErrorKind.UNREACHABLE
        assert "TLS certificate is not trusted" in str(untrusting)
        assert "SSL_CERT_FILE" in str(untrusting)
        await untrusted.close()
        monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
        backend = OllamaBackend(llm.url, timeout=5)
        backend.warm_up()  # loads the TLS settings, as start-up does on a thread
        llm.script(Text("over TLS", chunks=2))
        assert await stream_text(backend) == "over TLS"
        await backend.close()
