"""Find (and build, with ``tools/pi_js/build.sh``) pi 1.6.0's own session manager bundle for the benchmarks.

``prepare()`` returns the bundle, or the reason it cannot be used (no node, node too old, npm missing or
unreachable, a bundle of another pi version): the caller prints the reason and leaves pi's column out.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

__all__ = ["BUILD_SCRIPT", "MIN_NODE", "PI_VERSION", "PiJs", "default_dir", "prepare"]

PI_VERSION = "1.6.0"
MIN_NODE = 20
BUILD_SCRIPT = Path(__file__).resolve().parent.parent / "tools" / "pi_js" / "build.sh"
_HINT = "install node 20+ and npm, then run `bash tools/pi_js/build.sh`"


@dataclass(frozen=True)
class PiJs:
    """A usable bundle: ``node session_bench FILE N`` times pi's SessionManager on FILE."""

    directory: Path
    node: str
    session_bench: Path
    node_version: str


def default_dir() -> Path:
    """Where ``build.sh`` builds: ``$SESSIONTREE_PI_JS_DIR``, else ``~/.cache/sessiontree-pi-js``."""
    env = os.environ.get("SESSIONTREE_PI_JS_DIR")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "sessiontree-pi-js"


def _tail(text: str, lines: int = 6) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def prepare(directory: Path | None = None, *, build: bool = True) -> PiJs | str:
    """The bundle in ``directory`` (built or brought up to date first when ``build``), or why there is none."""
    directory = default_dir() if directory is None else directory
    node = shutil.which("node")
    if node is None:
        return f"node is not installed, so pi 1.6.0 is not measured ({_HINT})"
    try:
        version = subprocess.run(
            [node, "-p", "process.versions.node"], capture_output=True, text=True, timeout=60, check=True
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{node} does not run ({exc}), so pi 1.6.0 is not measured"
    if int(version.split(".")[0]) < MIN_NODE:
        return f"node {version} is too old (pi's session manager needs node {MIN_NODE}+), so pi 1.6.0 is not measured"
    if build and shutil.which("npm") is None:  # an existing bundle is still usable; none can be made
        if not (directory / "session-bench.mjs").is_file():
            return f"npm is not installed, so pi 1.6.0 cannot be installed and is not measured ({_HINT})"
        build = False
    if build:
        env = {**os.environ, "SESSIONTREE_PI_JS_DIR": str(directory)}
        done = subprocess.run(
            ["bash", str(BUILD_SCRIPT)], capture_output=True, text=True, env=env, timeout=1800
        )
        if done.returncode != 0:
            return f"building pi 1.6.0's bundle failed, so pi is not measured:\n{_tail(done.stderr)}"
    bench = directory / "session-bench.mjs"
    if not bench.is_file():
        return f"no pi bundle in {directory}, so pi 1.6.0 is not measured (run `bash tools/pi_js/build.sh`)"
    try:
        check = subprocess.run(
            [node, str(bench), "--check"], capture_output=True, text=True, timeout=120, check=True
        )
        found = json.loads(check.stdout)["pi"]
    except (OSError, subprocess.SubprocessError, ValueError, KeyError) as exc:
        return (
            f"{bench} does not load ({exc}), so pi is not measured: run `bash tools/pi_js/build.sh --force`"
        )
    if found != PI_VERSION:
        return f"{bench} is pi {found}, not {PI_VERSION}: run `bash tools/pi_js/build.sh`"
    return PiJs(directory=directory, node=node, session_bench=bench, node_version=version)
