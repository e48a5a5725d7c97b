"""Screenshots of the viewer's page with headless Chromium (Debian's package), through the DevTools
protocol: what the tests and ``docs/make_pictures.py`` use to see that the page shows the model."""
import os
import socket
import time


def _free_port(host):
    """A free TCP port on ``host`` (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host if host not in ("", "0.0.0.0") else "127.0.0.1", 0))
        return s.getsockname()[1]


CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--enable-unsafe-swiftshader", "--disable-quic",
                  "--no-first-run", "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--hide-scrollbars", "--mute-audio")
# JavaScript run in the page and in each of its frames
_TEXT = "document.body ? document.body.innerText : ''"
_CANVAS = "document.querySelector('canvas') ? 'canvas' : ''"
_NO_NOTICE = ("for (const e of document.querySelectorAll('[class*=\"Notification-root\"]'))"
              " { if (e.innerText.includes('WebGL')) e.remove(); }")


def find_chromium():
    """The path of a Chromium (or Chrome) executable: ``$EJCE_NB_CHROMIUM``, ``chromium``,
    ``chromium-browser``, ``google-chrome``; None when there is none."""
    import shutil
    for name in (os.environ.get("EJCE_NB_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def screenshot(url, path, size=(1000, 620), wait_for=(), timeout=120.0, settle=1.5, chromium=None):
    """Save a PNG of the page at ``url`` as headless Chromium draws it (WebGL in software), at
    ``size`` (width, height) pixels: once the page's text holds every string of ``wait_for``, a
    canvas is on it and ``settle`` seconds more have passed.  The page's frames count as the page
    (a page that embeds the viewer in a frame, as a notebook's output does, is waited for the
    same way).  The browser's notice about software WebGL is removed first.  Talks to Chromium
    over the DevTools protocol (needs ``websockets``, a dependency of viser); returns ``path``."""
    import base64
    import json
    import shutil
    import subprocess
    import tempfile
    import urllib.request
    from websockets.sync.client import connect
    exe = chromium or find_chromium()
    if exe is None:
        raise RuntimeError("screenshot needs Chromium (Debian: apt-get install chromium), or EJCE_NB_CHROMIUM=PATH")
    profile = tempfile.mkdtemp(prefix="ejce_nb_chromium_")
    port = _free_port("127.0.0.1")
    proc = subprocess.Popen([exe, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", f"--remote-debugging-port={port}",
                             f"--window-size={int(size[0])},{int(size[1])}", url],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + timeout

    def targets(kind):
        """The DevTools addresses of the browser's targets of ``kind`` (the page, its frames)."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=2) as r:
                return [t["webSocketDebuggerUrl"] for t in json.load(r)
                        if t.get("type") == kind and "webSocketDebuggerUrl" in t]
        except OSError:
            return []

    def call(ws, method, **params):
        ws.send(json.dumps({"id": 1, "method": method, "params": params}))
        while True:
            msg = json.loads(ws.recv(timeout=max(1.0, deadline - time.monotonic())))
            if msg.get("id") == 1:
                if "error" in msg:
                    raise RuntimeError(f"Chromium: {method}: {msg['error']}")
                return msg.get("result", {})

    def evaluate(ws, expression):
        return call(ws, "Runtime.evaluate", expression=expression, returnByValue=True).get("result", {}).get("value")

    def in_frames(expression):
        """``expression``'s value in each frame of the page drawn by another process (a frame of
        another site, as the viewer's address in a notebook's output)."""
        out = []
        for address in targets("iframe"):
            try:
                with connect(address, max_size=None, proxy=None) as fw:
                    out.append(evaluate(fw, expression))
            except (OSError, RuntimeError, TimeoutError):
                pass
        return out

    try:
        pages = []
        while not pages:
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError(f"Chromium did not open {url} (exit status {proc.poll()})")
            pages = targets("page")
            if not pages:
                time.sleep(0.2)
        with connect(pages[0], max_size=None, proxy=None) as ws:
            call(ws, "Emulation.setDeviceMetricsOverride", width=int(size[0]), height=int(size[1]),
                 deviceScaleFactor=1, mobile=False)
            while True:
                text = "\n".join(str(x or "") for x in [evaluate(ws, _TEXT), *in_frames(_TEXT)])
                canvas = any(x == "canvas" for x in [evaluate(ws, _CANVAS), *in_frames(_CANVAS)])
                if canvas and all(w in text for w in wait_for):
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the page at {url} did not show {list(wait_for)} within {timeout} s")
                time.sleep(0.25)
            time.sleep(settle)
            evaluate(ws, _NO_NOTICE)
            in_frames(_NO_NOTICE)
            time.sleep(0.3)
            png = call(ws, "Page.captureScreenshot", format="png")["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(png))
        return path
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(profile, ignore_errors=True)
