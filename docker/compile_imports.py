"""Write the bytecode of what importing the listed modules loads (run in an image's build).

    env -u PYTHONDONTWRITEBYTECODE python compile_imports.py imports.txt

imports.txt is docker/imports.py's list for the layer: `a.b` imports module a.b, `a.b:c` imports
a.b and then asks it for c (a package that loads submodules lazily loads c's). Python writes a
__pycache__ file for every source module an import loads, where pip had compiled every installed
file (`pip install --no-compile` before this); docker/imports.py says why. A module that fails to
import (a backend whose native library or model is not in this image, a name that is not a
module) is skipped: this only saves the containers compiling in memory. Each import has 120 s.
The last line says how many imports loaded and how many modules are now compiled.
"""

from __future__ import annotations

import importlib
import os
import signal
import sys

LIMIT_S = 120


def _timeout(signum, frame):
    raise TimeoutError(f"import took over {LIMIT_S} s")


def main(path: str) -> None:
    if sys.dont_write_bytecode:
        sys.exit("compile_imports.py: run it with PYTHONDONTWRITEBYTECODE unset (env -u PYTHONDONTWRITEBYTECODE)")
    with open(path, encoding="utf-8") as f:
        names = [line.strip() for line in f if line.strip() and not line.startswith("#")]
    signal.signal(signal.SIGALRM, _timeout)
    loaded = 0
    for name in names:
        module, _, attr = name.partition(":")
        signal.alarm(LIMIT_S)
        try:
            m = importlib.import_module(module)
            if attr:
                getattr(m, attr)
            loaded += 1
        except BaseException:  # noqa: BLE001 - anything an import can raise, SystemExit included
            pass
        finally:
            signal.alarm(0)
    print(f"compile_imports: {loaded} of {len(names)} imports loaded; {len(sys.modules)} modules in memory",
          flush=True)
    os._exit(0)  # an imported library's non-daemon thread must not keep the build step waiting


if __name__ == "__main__":
    main(sys.argv[1])
