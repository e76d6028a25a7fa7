"""duplexeval_runner.net: the settings, URLs, TLS contexts, failure reasons and pcm16 the network
runners share (each runner's own tests drive them against its protocol double)."""

from __future__ import annotations

import base64
import shutil
import socket
import ssl

import numpy as np
import pytest

from duplexeval_common.errors import DuplexEvalError
from duplexeval_runner import net

from .servers import make_cert


@pytest.fixture(autouse=True)
def no_env(monkeypatch):
    for var in (net.URL_ENV, net.INSECURE_ENV, net.CA_ENV):
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


# --- settings ---

def test_insecure_comes_from_the_arg_else_the_environment_as_1_or_0(no_env):
    assert net.flag("r", True) is True and net.flag("r", False) is False
    assert net.flag("r", None) is False                      # unset: verify
    for raw, want in (("1", True), (" YES ", True), ("on", True), ("0", False), ("off", False), ("", False)):
        no_env.setenv(net.INSECURE_ENV, raw)
        assert net.flag("r", None) is want, raw
    assert net.flag("r", False) is False                     # the arg wins over MODEL_INSECURE=on
    no_env.setenv(net.INSECURE_ENV, "maybe")
    with pytest.raises(DuplexEvalError, match=r"^runner 'r': MODEL_INSECURE='maybe' is neither 1 nor 0$"):
        net.flag("r", None)
    with pytest.raises(DuplexEvalError, match=r"^runner 'r': insecure must be true or false$"):
        net.flag("r", "yes")


def test_ca_file_must_be_a_file_and_is_recorded_absolute(no_env, tmp_path):
    pem = tmp_path / "ca.pem"
    pem.write_text("x")
    assert net.ca_file("r", None) is None
    no_env.chdir(tmp_path)
    assert net.ca_file("r", "ca.pem") == str(pem)
    no_env.setenv(net.CA_ENV, str(pem))
    assert net.ca_file("r", None) == str(pem)
    with pytest.raises(DuplexEvalError, match=r"^runner 'r': ca_file '/no/such.pem' is not a file$"):
        net.ca_file("r", "/no/such.pem")
    with pytest.raises(DuplexEvalError, match="is not a file"):
        net.ca_file("r", str(tmp_path))                          # a folder is not a file


def test_url_comes_from_the_arg_else_model_url(no_env):
    assert net.url_setting("r", None) is None
    with pytest.raises(DuplexEvalError, match=r"^runner 'r': no server URL: set the environment variable "
                                              r"MODEL_URL \(e\.g\. http://h:1\) or runner_args url$"):
        net.url_setting("r", None, example="http://h:1")
    no_env.setenv(net.URL_ENV, "  http://env:2  ")
    assert net.url_setting("r", None, example="http://h:1") == "http://env:2"
    assert net.url_setting("r", "http://arg:3") == "http://arg:3"
    with pytest.raises(DuplexEvalError, match="url must be a string"):
        net.url_setting("r", 5)


def test_numbers_are_finite_and_never_bools():
    assert net.is_number(1) and net.is_number(0.5) and not net.is_number(True) and not net.is_number("1")
    assert not net.is_number(float("nan")) and not net.is_number(float("inf"))
    assert net.is_int(3) and not net.is_int(3.0) and not net.is_int(False)


# --- URLs ---

def test_userinfo_becomes_basic_auth_and_the_secret_to_scrub():
    u = net.parse_url("r", " https://bob:p%40ss@Example.org:8081/pre/fix?q=1 ")
    assert (u.scheme, u.hostname, u.port, u.netloc, u.path, u.query) == \
        ("https", "example.org", 8081, "example.org:8081", "/pre/fix", "q=1")
    assert u.authorization == "Basic " + base64.b64encode(b"bob:p@ss").decode() and u.secret == "p@ss"
    assert "p%40ss" in u.raw_netloc and "p%40ss" not in u.netloc
    token = net.parse_url("r", "wss://tok-123@h")
    assert token.secret == "tok-123" and token.authorization == "Basic " + base64.b64encode(b"tok-123:").decode()
    plain = net.parse_url("r", "http://[::1]:5")
    assert plain.netloc == "[::1]:5" and plain.authorization is None and plain.secret is None
    assert not plain.has_userinfo and net.parse_url("r", "http://@h").has_userinfo


def test_a_malformed_url_is_one_line_with_or_without_the_parsers_reason():
    with pytest.raises(DuplexEvalError, match=r"^runner 'r': url is not a valid URL \(Port out of range"):
        net.parse_url("r", "https://u:pw-123456789@h:99999")
    with pytest.raises(DuplexEvalError, match=r"^runner 'r': url is not a valid URL$"):
        net.parse_url("r", "https://h:99999", detail=False)


# --- TLS ---

def test_ssl_contexts():
    loose = net.ssl_context(True, None)
    assert loose.verify_mode == ssl.CERT_NONE and not loose.check_hostname
    assert net.ssl_context(False, None, system=False) is None     # the client library's own
    system = net.ssl_context(False, None)
    assert system.verify_mode == ssl.CERT_REQUIRED and system.check_hostname


@pytest.mark.skipif(shutil.which("openssl") is None, reason="the openssl CLI makes the test certificate")
def test_a_pinned_certificate_is_trusted_as_given(tmp_path):
    cert, _ = make_cert(tmp_path)
    ctx = net.ssl_context(False, str(cert), system=False)
    assert ctx.verify_mode == ssl.CERT_REQUIRED and ctx.check_hostname
    assert [c["subject"] for c in ctx.get_ca_certs()] == [((("commonName", "localhost"),),)]
    if hasattr(ssl, "VERIFY_X509_STRICT"):
        assert not ctx.verify_flags & ssl.VERIFY_X509_STRICT


# --- why a connection failed ---

def behind(outer: BaseException, *inner: BaseException) -> BaseException:
    """outer, caused by inner[0], caused by inner[1], ..."""
    e = outer
    for nxt in inner:
        e.__cause__ = nxt
        e = nxt
    return outer


class Wrapper(Exception):
    """Like aiohttp's ClientConnectorCertificateError: the detail in an attribute, not the chain."""

    def __init__(self, certificate_error: BaseException):
        super().__init__("cannot connect")
        self.certificate_error = certificate_error


def test_a_certificate_failure_anywhere_says_what_to_do():
    bad = ssl.SSLCertVerificationError(1, "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed")
    bad.verify_message = "self-signed certificate"
    exc = behind(RuntimeError("connect failed"), TimeoutError(), Wrapper(bad))
    assert net.cert_failure(exc) is bad
    assert net.connect_reason(exc, 3.0) == ("TLS certificate verification failed (self-signed certificate); pass "
                                            "runner_args ca_file (or MODEL_CA) with the server's certificate, or "
                                            "insecure (or MODEL_INSECURE=1)")
    assert net.connect_reason(exc, how="pin it").endswith("(self-signed certificate); pin it")
    assert net.cert_failure(behind(RuntimeError("x"), ConnectionRefusedError())) is None


@pytest.mark.parametrize("inner, kw, want", [
    (ConnectionRefusedError(111, "Connection refused"), {}, "connection refused (is the server running on that port?)"),
    (socket.gaierror(-2, "Name or service not known"), {}, "unknown host ([Errno -2] Name or service not known)"),
    (TimeoutError(), {"timeout_s": 0.5}, "no answer within 0.5 s"),
    (TimeoutError(), {}, "timed out"),
    (OSError(101, "Network is unreachable"), {"strerror": True}, "Network is unreachable"),
    (OSError(101, "Network is unreachable"), {}, "OSError: [Errno 101] Network is unreachable"),
])
def test_common_causes_are_named_from_inside_the_chain(inner, kw, want):
    assert net.connect_reason(behind(RuntimeError("wrapper"), inner), **kw) == want


def test_a_tls_handshake_error_and_the_runners_own_status_reading():
    exc = behind(RuntimeError("x"), ssl.SSLError(1, "[SSL: WRONG_VERSION_NUMBER] wrong version number"))
    assert net.connect_reason(exc).startswith("TLS handshake failed (")

    class Refused(Exception):
        status = 401

    def status(e):
        return f"HTTP {e.status}" if isinstance(e, Refused) else None

    exc = behind(RuntimeError("x"), Refused(), ConnectionRefusedError())
    assert net.connect_reason(exc, status=status) == "HTTP 401"        # nearest cause first
    assert net.connect_reason(exc) == "connection refused (is the server running on that port?)"


def test_an_unknown_failure_is_described_on_one_short_line():
    exc = behind(RuntimeError("outer\nline"), ValueError("inner " + "x" * 500 + "\n tail"))
    text = net.connect_reason(exc)
    assert text.startswith("ValueError: inner xxx") and text.endswith("...") and "\n" not in text
    assert len(text) == len("ValueError: ") + net.DETAIL_CHARS
    assert net.connect_reason(exc, outer=True) == "RuntimeError: outer line"
    assert net.connect_reason(KeyError()) == "KeyError"


# --- pcm16 ---

def test_pcm16_is_clipped_never_wrapped_and_an_odd_byte_is_dropped():
    raw = net.to_pcm16(np.array([1.0, -1.0, 1.5, -1.5, 0.5, 0.0], dtype=np.float32))
    assert isinstance(raw, bytes)
    assert np.frombuffer(raw, dtype="<i2").tolist() == [32767, -32767, 32767, -32768, 16384, 0]
    pcm = np.array([16384, -32768, 1], "<i2").tobytes()
    for data in (pcm + b"\x01", bytearray(pcm), memoryview(pcm)):
        y = net.from_pcm16(data)
        assert y.dtype == np.float32 and y.tolist() == [0.5, -1.0, 1 / 32768]
    assert net.from_pcm16(b"").size == 0


def test_pcm16_bytes_are_little_endian_on_any_machine():
    assert net.to_pcm16(np.array([1 / 32767], dtype=np.float32)) == b"\x01\x00"
    assert net.from_pcm16(b"\x00\x40").tolist() == [0.5]
