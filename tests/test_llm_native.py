"""The native engine: llama.cpp's server compiled for this CPU (``codeworld build-llm``).

The build options follow the CPU's flags, the binary is found by them, a wrong source archive is
refused, the engine is chosen as documented, and, where the binary has been built (``make
native-llm``, an option), the real server runs on loopback and answers like any engine.
"""

from __future__ import annotations

import json
import socket
import urllib.request

import pytest

from codeworld.cli import main
from codeworld.llm import _local as local, _native as native
from codeworld.llm.types import BackendNotInstalledError

AVX512_CPU = "processor : 0\nflags : fpu sse4_2 avx avx2 bmi2 fma f16c avx512f avx512_vnni amx_int8\n"
AVX2_CPU = "processor : 0\nflags : fpu sse4_2 avx avx2 bmi2 fma f16c\n"


def test_build_options_follow_the_cpu_flags(monkeypatch):
    monkeypatch.setattr(native.platform, "machine", lambda: "x86_64")
    wide = native.build_options(native.cpu_flags(AVX512_CPU))
    narrow = native.build_options(native.cpu_flags(AVX2_CPU))
    assert "-DGGML_NATIVE=OFF" in wide and "-DGGML_AVX512=ON" in wide and "-DGGML_AVX512_VNNI=ON" in wide
    assert "-DGGML_AVX512_BF16=OFF" in wide  # a flag the CPU lacks stays off
    assert "-DGGML_AMX_INT8=OFF" in wide  # AMX stays off even where the CPU has it
    assert "-DGGML_AVX2=ON" in narrow and "-DGGML_AVX512=OFF" in narrow
    assert native.build_key(wide) != native.build_key(narrow)  # each CPU gets its own binary
    assert native.cpu_flags("no flags here") is None
    assert "-DGGML_NATIVE=ON" in native.build_options(None)  # unknown: the compiler's own choice


def test_the_binary_is_found_by_this_cpus_options(monkeypatch, tmp_path):
    monkeypatch.setenv("CODEWORLD_NATIVE_DIR", str(tmp_path))
    assert native.native_server_binary() is None
    directory = native.build_dir()
    assert directory.parent == tmp_path
    directory.mkdir()
    binary = directory / native.BINARY
    binary.write_text("#!/bin/sh\n")
    assert native.native_server_binary() is None  # not executable, no build record
    binary.chmod(0o755)
    (directory / "build.json").write_text("{}")
    assert native.native_server_binary() == binary
    options = native.build_options(native.cpu_flags(AVX2_CPU)) + ["-DSOMETHING=ON"]
    assert native.native_server_binary(options) is None  # other options, other binary


def test_a_source_archive_with_another_checksum_is_refused(monkeypatch, tmp_path):
    fake = tmp_path / native.SOURCE_FILE
    fake.write_bytes(b"not llama.cpp")
    monkeypatch.setenv(native.SOURCE_ENV, str(fake))
    with pytest.raises(native.NativeBuildError, match="expected " + native.SOURCE_SHA256):
        native.fetch_source(tmp_path)
    monkeypatch.setenv(native.SOURCE_ENV, str(tmp_path / "missing.tar.gz"))
    with pytest.raises(native.NativeBuildError, match="not a file"):
        native.fetch_source(tmp_path)


def test_a_build_without_cmake_says_how_to_get_it(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("CODEWORLD_NATIVE_DIR", str(tmp_path))
    monkeypatch.setattr(native, "_tool", lambda name: None)
    with pytest.raises(native.NativeBuildError, match=r"needs CMake: pip install 'codeworld\[native\]'"):
        native.build_native_server()
    assert main(["build-llm"]) == 1
    assert "needs CMake" in capsys.readouterr().err
    assert main(["build-llm", "--where"]) == 1
    assert "not built" in capsys.readouterr().out


def test_the_build_is_suggested_only_where_it_pays_and_is_missing(monkeypatch, tmp_path):
    assert native.build_would_pay(native.cpu_flags(AVX512_CPU))
    assert not native.build_would_pay(native.cpu_flags(AVX2_CPU))
    assert not native.build_would_pay(native.cpu_flags("flags : avx2 avx512f\n"))  # no VNNI
    assert not native.build_would_pay(set())
    monkeypatch.setenv("CODEWORLD_NATIVE_DIR", str(tmp_path))
    monkeypatch.setattr(native.platform, "machine", lambda: "x86_64")
    cpu = {"flags": {"avx2", "avx512f", "avx512_vnni"}}
    monkeypatch.setattr(native, "cpu_flags", lambda cpuinfo=None: cpu["flags"])
    assert "codeworld build-llm" in native.build_hint()
    directory = native.build_dir()  # once built, no hint
    directory.mkdir(parents=True)
    (directory / native.BINARY).write_text("#!/bin/sh\n")
    (directory / native.BINARY).chmod(0o755)
    (directory / "build.json").write_text("{}")
    assert native.build_hint() is None
    cpu["flags"] = {"avx2"}
    assert native.build_hint() is None


def test_the_engine_is_native_only_where_built(monkeypatch, tmp_path):
    monkeypatch.setenv("CODEWORLD_NATIVE_DIR", str(tmp_path))
    monkeypatch.delenv("CODEWORLD_LOCAL_ENGINE", raising=False)
    settings = local.ServerSettings().resolved()
    assert settings.engine == "xllamacpp" and settings.repack
    monkeypatch.setattr(local, "default_engine", lambda: "native")
    one, four = local.ServerSettings().resolved(), local.ServerSettings(slots=4).resolved()
    assert one.engine == "native" and not one.repack  # its own dot products: faster prompts
    assert four.repack  # repacked matrix products pay for several sequences at once
    monkeypatch.setenv("CODEWORLD_LOCAL_ENGINE", "xllamacpp")
    assert local.ServerSettings().resolved().engine == "xllamacpp"
    assert local.LocalOptions(engine="native").server_settings().resolved().engine == "native"
    with pytest.raises(ValueError, match="engine must be one of"):
        local.ServerSettings(engine="vllm")


def test_asking_for_an_unbuilt_native_engine_says_how_to_build_it(monkeypatch, tmp_path):
    monkeypatch.setenv("CODEWORLD_NATIVE_DIR", str(tmp_path))
    with pytest.raises(BackendNotInstalledError, match="codeworld build-llm"):
        local.LocalServer(tmp_path / "model.gguf", local.ServerSettings(engine="native", threads=1))


def test_server_arguments_listen_on_loopback_and_carry_the_settings(tmp_path):
    settings = local.ServerSettings(threads=2, slots=1, engine="native").resolved()
    args = native.server_arguments(tmp_path / "llama-server", tmp_path / "m.gguf", 8080, settings,
                                   None, "alias")
    assert args[args.index("--host") + 1] == "127.0.0.1"
    assert args[args.index("-t") + 1] == "2" and "--no-repack" in args
    assert args[args.index("--spec-type") + 1] == "ngram-mod"
    assert args[args.index("--spec-ngram-mod-n-match") + 1] == "24"
    assert args[args.index("--poll") + 1] == "50"
    simple = native.server_arguments(tmp_path / "s", tmp_path / "m.gguf", 1, local.ServerSettings(
        threads=2, speculation="ngram", engine="native").resolved(), None, "a")
    assert simple[simple.index("--spec-type") + 1] == "ngram-simple"
    spread = native.server_arguments(tmp_path / "s", tmp_path / "m.gguf", 1,
                                     local.ServerSettings(threads=2, slots=4, engine="native",
                                                          context=1024).resolved(), None, "a")
    assert spread[spread.index("--spec-type") + 1] == "ngram-mod" and "--no-repack" not in spread
    assert spread[spread.index("-c") + 1] == "4096" and spread[spread.index("-np") + 1] == "4"


built = pytest.mark.skipif(native.native_server_binary() is None,
                           reason="the native server is an option not built here (make native-llm builds it)")


@built
def test_the_native_server_answers_on_loopback_only():
    server = local.LocalServer(local.ensure_model_file(),
                               local.ServerSettings(engine="native", context=2048))
    try:
        assert server.engine == "native" and server.settings.speculation == "ngram-mod"
        body = json.dumps({"messages": [{"role": "user", "content": "Say OK."}], "max_tokens": 4,
                           "temperature": 0}).encode()
        request = urllib.request.Request(server.base_url + "/chat/completions", data=body,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=300) as response:
            answer = json.loads(response.read())
        assert answer["usage"]["completion_tokens"] >= 1
        # Bound to 127.0.0.1: another address of this machine is refused.
        address = socket.gethostbyname(socket.gethostname())
        if not address.startswith("127."):
            with pytest.raises(OSError):
                socket.create_connection((address, server.port), timeout=5).close()
    finally:
        server.close()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", server.port), timeout=5).close()  # stopped
