"""The draft's reference implementation (draft-irtf-cfrg-vdaf-20's ``poc/``) in an interpreter of its own, driven
over a pipe by a worker script (``prio3_reference.py``, ``poplar1_reference.py``): one JSON request a line, one JSON
reply a line.  The reference needs Python >= 3.12 and pycryptodomex; without them, ``problem`` says why it is not
running and every reply is None (the benchmarks print "not run" instead of a ratio)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

CTX = b"benchmark"


class ReferenceWorker:
    "One worker script under the reference's interpreter, or why it is not running (``problem``)"

    def __init__(self, worker: Path, directory: str | None, python: str | None) -> None:
        self.problem: str | None = None
        self.process: subprocess.Popen | None = None
        self.version = ""
        if directory is None:
            self.problem = "not run (no --reference DIR)"
            return
        python = python or shutil.which("python3.12")
        if python is None:
            self.problem = "not run: no python3.12 on the PATH (--reference-python)"
            return
        try:
            self.process = subprocess.Popen([python, str(worker), directory], stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, text=True)
        except OSError as exc:
            self.problem = f"not run: {python}: {exc.strerror}"
            return
        hello = self._read()
        if "error" in hello:
            self.problem = f"not run: {hello['error']}"
            self.close()
        else:
            self.version = f"Python {hello['python']}, pycryptodomex {hello['pycryptodomex']}"

    def _read(self) -> dict:
        assert self.process is not None and self.process.stdout is not None
        line = self.process.stdout.readline()
        return json.loads(line) if line else {"error": f"the reference's interpreter exited ({self.process.wait()})"}

    def ask(self, request: dict) -> dict | None:
        "The reply, or None (and ``problem`` set) when the reference is not running or failed"
        if self.process is None:
            return None
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({**request, "ctx": CTX.hex()}) + "\n")
        self.process.stdin.flush()
        reply = self._read()
        if "error" in reply:
            self.problem = f"failed: {reply['error']}"
            print(reply.get("traceback", ""), file=sys.stderr)
            self.close()
            return None
        return reply

    def close(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.communicate()  # waits, and closes the pipes
            self.process = None
