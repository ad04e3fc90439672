"""What the browser tests of the live inspector share: the skip rule, starting and stopping
`ebt_arena --inspect 0`, and a headless chromium (tests/browser/inspector_test.py and
inspector_security_test.py; run with Debian's /usr/bin/python3, where python3-selenium installs).

Importing it exits with status 77 (CTest: skipped) when selenium, chromium or chromedriver is missing,
unless EBT_REQUIRE_BROWSER=1 (CI), where that is a failure.
"""
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import time

SKIP = 77


def skip_or_fail(message):
    if os.environ.get("EBT_REQUIRE_BROWSER") == "1":
        print("FAIL: " + message + " (EBT_REQUIRE_BROWSER=1)")
        sys.exit(1)
    print("SKIPPED: " + message)
    sys.exit(SKIP)


try:
    from selenium import webdriver
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait
except ImportError:
    skip_or_fail("python3-selenium is not installed for " + sys.executable +
                 " (Debian: apt-get install chromium chromium-driver python3-selenium)")

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver") or ("/usr/bin/chromedriver" if os.path.exists("/usr/bin/chromedriver") else None)
if not CHROMIUM or not CHROMEDRIVER:
    skip_or_fail("chromium or chromedriver is missing (Debian: apt-get install chromium chromium-driver)")


def start_arena(arena, agents, extra=()):
    """Starts `ebt_arena --agents AGENTS --inspect 0 EXTRA...`; returns the process and the URL it printed."""
    proc = subprocess.Popen([arena, "--agents", str(agents), "--inspect", "0", *extra], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, bufsize=1)
    deadline = time.time() + 60
    seen = []
    while time.time() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 1.0)
        if not ready:
            if proc.poll() is not None:
                break
            continue
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line)
        m = re.search(r"inspector: (http://127\.0\.0\.1:\d+/(\?token=\S+)?)", line)
        if m:
            return proc, m.group(1)
    proc.kill()
    raise SystemExit("FAIL: ebt_arena did not print the inspector's URL:\n" + "".join(seen))


def stop_arena(proc):
    proc.send_signal(signal.SIGINT)
    try:
        out, _ = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise SystemExit("FAIL: ebt_arena did not stop within 30 s of SIGINT")
    if proc.returncode != 0 or "done:" not in out:
        raise SystemExit("FAIL: ebt_arena ended with status %d:\n%s" % (proc.returncode, out))


def open_browser():
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1500,1000", "--no-first-run", "--disable-extensions"):
        options.add_argument(arg)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
