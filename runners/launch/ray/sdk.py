"""Ray's Job Submission SDK from here: whether it is installed (found without importing Ray),
the address from the profile alone (Ray's client would prefer RAY_ADDRESS), and the cluster's
token read where Ray's CLI reads it, sent only as a header (never in a file, record or message)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from catalog.errors import StepsError

ADDRESS_VARS = ("RAY_ADDRESS", "RAY_API_SERVER_ADDRESS")

# What the Job SDK imports: Ray's job_submission, and requests/aiohttp from ray[default].
SDK_MODULES = ("ray", "ray.job_submission", "requests", "aiohttp")


def sdk_missing() -> list[str]:
    """The Job SDK's modules not installed here, found without importing Ray (seconds)."""
    import importlib.util

    missing = [m for m in SDK_MODULES if "." not in m and importlib.util.find_spec(m) is None]
    ray = None if "ray" in missing else importlib.util.find_spec("ray")
    if ray is not None and not any(
        (Path(d) / "job_submission").is_dir() for d in ray.submodule_search_locations or ()
    ):
        missing.append("ray.job_submission")
    return missing


def sdk_error(missing: list[str]) -> StepsError:
    return StepsError(
        "E-RAY-MISSING",
        f"Ray's Job Submission SDK is not installed here (missing: {', '.join(missing)})",
        fix="pip install 'nemo-rl-steps[ray]' (ray[default])",
        exit_code=2,
    )


# Where Ray's own CLI and SDK read the cluster's token, in Ray's order (ray/_raylet's
# AuthenticationTokenLoader, Ray 2.5x): the variable, then the file it names, then the default.
TOKEN_VAR, TOKEN_PATH_VAR = "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"
DEFAULT_TOKEN_FILE = "~/.ray/auth_token"
WHERE_RAY_LOOKS = f"{TOKEN_VAR}, the file {TOKEN_PATH_VAR} names, or {DEFAULT_TOKEN_FILE}"
MAX_TOKEN_BYTES = 64 * 1024


def _source() -> str:
    """Where Ray reads the token from here (a variable's name or a file's path)."""
    if os.environ.get(TOKEN_VAR):
        return TOKEN_VAR
    named = os.environ.get(TOKEN_PATH_VAR)
    return f"{named} ({TOKEN_PATH_VAR})" if named else str(Path.home() / ".ray" / "auth_token")


def _token() -> str | None:
    """The token as Ray would load it here: stripped, None when absent or empty; never shown."""
    if os.environ.get(TOKEN_VAR):
        return os.environ[TOKEN_VAR].strip() or None
    named = os.environ.get(TOKEN_PATH_VAR)
    path = Path(named) if named else Path.home() / ".ray" / "auth_token"
    try:
        with path.open("rb") as fh:
            return fh.read(MAX_TOKEN_BYTES).decode("utf-8", "replace").strip() or None
    except OSError:
        if named:
            raise auth_error("", f"{TOKEN_PATH_VAR} names {path}, which cannot be read") from None
        return None


def _dashboard_mode(address: str, timeout: float) -> str | None:
    """The authentication mode the dashboard says it runs in (public: asked without a token);
    None from a dashboard older than token auth, or one that cannot answer now."""
    import urllib.request

    try:
        with urllib.request.urlopen(f"{address}/api/authentication_mode", timeout=timeout) as r:
            return str(json.loads(r.read(4096).decode("utf-8")).get("authentication_mode"))
    except (OSError, ValueError, AttributeError):
        return None


def auth_headers(address: str, timeout: float = 10) -> dict[str, str]:
    """The Authorization header Ray's CLI would send: only to a dashboard that asks for a token
    (any, with RAY_AUTH_MODE=token; none when disabled). E-RAY-AUTH when none is found."""
    mode = os.environ.get("RAY_AUTH_MODE", "").lower()
    if mode == "disabled" or (mode != "token" and _dashboard_mode(address, timeout) != "token"):
        return {}
    token = _token()
    if token is None:
        raise auth_error(address, f"it asks for a token and {_source()} holds none")
    return {"Authorization": f"Bearer {token}"}


def auth_error(address: str, detail: str) -> StepsError:
    at = f" at {address}" if address else ""
    return StepsError(
        "E-RAY-AUTH",
        f"the Ray dashboard{at} refused us: {detail}",
        fix=f"put the cluster's token where Ray looks for it: {WHERE_RAY_LOOKS} (`ray "
        "get-auth-token` on the head prints it); the address is right, the dashboard answered",
        exit_code=2,
    )


def refusal(status: int | None, address: str) -> StepsError | None:
    """E-RAY-AUTH for an HTTP 401 (no token sent) or 403 (the token sent is not the cluster's)."""
    if status == 401:
        return auth_error(address, f"Unauthorized (401): it wants a token ({WHERE_RAY_LOOKS})")
    if status == 403:
        return auth_error(address, f"Forbidden (403): the token from {_source()} is not its")
    return None


def bounded_client(address: str, timeout: float) -> Any:
    """Ray's JobSubmissionClient with our token header, every HTTP call bounded (Ray sets no
    timeout: a hung job agent would keep us waiting), a 401/403 raised as E-RAY-AUTH."""
    import ray.exceptions
    from ray.job_submission import JobSubmissionClient

    # Ray's token auth and its error came after 2.40, the `ray` extra's floor: () catches nothing
    refused: Any = getattr(ray.exceptions, "AuthenticationError", ())

    class Bounded(JobSubmissionClient):  # type: ignore[misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self.timeout = timeout  # `submit` raises it while it uploads and submits
            super().__init__(*args, **kwargs)

        def _do_request(self, method: str, endpoint: str, **kwargs: Any) -> Any:
            kwargs.setdefault("timeout", self.timeout)
            try:
                return super()._do_request(method, endpoint, **kwargs)
            except refused as exc:
                status = 403 if str(exc).startswith("Authentication failed") else 401
                raise refusal(status, address) or exc from None

    headers = auth_headers(address, timeout)
    saved = {k: os.environ.pop(k) for k in ADDRESS_VARS if k in os.environ}  # the profile's wins
    try:
        return Bounded(address, headers=headers)
    finally:
        os.environ.update(saved)


def dashboard_get(address: str, path: str, timeout: float = 10) -> Any:
    """The dashboard's JSON answer at `path`; E-RAY-AUTH when it refuses us."""
    import urllib.error
    import urllib.request

    request = urllib.request.Request(f"{address}{path}", headers=auth_headers(address))
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            return json.loads(resp.read().decode("utf-8"))
    except urllib.error.HTTPError as exc:
        raise refusal(exc.code, address) or exc from None


def dashboard_logs(address: str, job_id: str) -> str:
    """A job's driver log from the dashboard by plain HTTP; empty when it cannot say."""
    try:
        got = dashboard_get(address.rstrip("/"), f"/api/jobs/{job_id}/logs", timeout=30)
        return str(got.get("logs", ""))
    except (OSError, ValueError, AttributeError):
        return ""


def unreachable(address: str, detail: str) -> StepsError:
    return StepsError(
        "E-REMOTE-HOST",
        f"cannot reach the Ray dashboard at {address}: {detail}",
        fix="check the profile's address (the dashboard URL, port 8265 by default), that the "
        "cluster is up, and any port-forward or VPN",
        exit_code=2,
    )


def client(address: str, timeout: float) -> Any:
    """`bounded_client` (E-RAY-MISSING without the SDK, E-REMOTE-HOST without an answer)."""
    missing = sdk_missing()
    if missing:
        raise sdk_error(missing)
    try:
        import logging

        import ray.job_submission  # noqa: F401

        for name in ("ray", "ray.dashboard.modules.job.sdk"):
            logging.getLogger(name).setLevel(logging.WARNING)
    except ImportError as exc:
        raise sdk_error([exc.name or str(exc)]) from None
    try:
        return bounded_client(address, timeout)
    except StepsError:
        raise
    except Exception as exc:  # requests' ConnectionError/Timeout, Ray's RuntimeError
        raise unreachable(address, str(exc).splitlines()[0]) from None
