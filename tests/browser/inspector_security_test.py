#!/usr/bin/python3
"""The live inspector's security options in a real browser (headless chromium driven by selenium).

    /usr/bin/python3 tests/browser/inspector_security_test.py BUILD/bin/ebt_arena

Two runs of `ebt_arena --agents 24 --inspect 0`, both on 127.0.0.1 and a free port:

1. `--inspect-address 127.0.0.1 --inspect-token TOKEN`: the printed URL carries the token; a request
   without it, or with another, gets 401 (the page opened without it shows the refusal); the page
   opened with it lists the agents, draws a guard's tree, and its Pause and Resume buttons work (the
   page sends the token with every request, commands included).
2. `--inspect-read-only`: the page hides its command buttons and shows "read-only"; a command sent
   anyway (pause, write) gets 403 and changes nothing: the world keeps running and the key keeps its
   value.

Each run is stopped with SIGINT and must exit cleanly. Exit status 77 (CTest: skipped) when selenium,
chromium or chromedriver is missing, unless EBT_REQUIRE_BROWSER=1 (tests/browser/inspector_support.py).
"""
import json
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

from inspector_support import (By, NoSuchElementException, StaleElementReferenceException, WebDriverWait,
                               open_browser, start_arena, stop_arena)

AGENTS = 24
TOKEN = "t0ken-for_the.test~1"


def request(url, path, headers=None, body=None):
    """(status, parsed JSON body) of one request to the inspector at `url` (its base, any query dropped)."""
    base = urllib.parse.urlsplit(url)
    target = "%s://%s%s" % (base.scheme, base.netloc, path)
    data = urllib.parse.urlencode(body).encode() if body is not None else None
    req = urllib.request.Request(target, data=data, headers=headers or {}, method="POST" if data is not None else "GET")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read().decode())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read().decode())


def page_helpers(driver):
    text_of = lambda i: driver.execute_script("return document.getElementById(arguments[0]).textContent", i)
    handles = lambda: driver.execute_script(
        "return [...document.querySelectorAll('#agents tr')].map(r => r.dataset.handle)")
    node_count = lambda: driver.execute_script("return document.querySelectorAll('#tree-box g.node').length")

    def click_row(handle):
        for _ in range(50):
            try:
                driver.find_element(By.CSS_SELECTOR, "#agents tr[data-handle='%s']" % handle).click()
                return
            except (StaleElementReferenceException, NoSuchElementException):
                time.sleep(0.05)
        raise SystemExit("FAIL: could not click agent " + handle)

    return text_of, handles, node_count, click_row


def severe_logs(driver):
    return [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]


def check_token(arena, driver):
    proc, url = start_arena(arena, AGENTS, ["--inspect-address", "127.0.0.1", "--inspect-token", TOKEN])
    try:
        assert url.endswith("/?token=" + TOKEN), url
        base = url[:url.index("?")]
        # Without the token, or with another: 401, for the page and the API alike.
        for path, headers in (("/", {}), ("/api/state", {}), ("/api/state", {"X-Ebt-Token": TOKEN + "x"}),
                              ("/api/agents?token=wrong", {})):
            status, body = request(url, path, headers)
            assert status == 401, (path, headers, status, body)
            assert "needs its token" in body["error"], body
        status, body = request(url, "/api/pause", {"X-Ebt-Inspector": "1"}, {})
        assert status == 401, (status, body)
        status, body = request(url, "/api/state", {"X-Ebt-Token": TOKEN})
        assert status == 200 and body["read_only"] is False and body["paused"] is False, (status, body)

        # The page opened without the token shows the refusal, not the inspector.
        driver.get(base)
        assert driver.title != "ebt inspector", driver.title
        assert "needs its token" in driver.find_element(By.TAG_NAME, "body").text
        severe_logs(driver)  # (the 401 is logged: drop it)

        # Opened with it, it works, commands included.
        wait = WebDriverWait(driver, 30, poll_frequency=0.1)
        driver.get(url)
        assert driver.title == "ebt inspector", driver.title
        text_of, handles, node_count, click_row = page_helpers(driver)
        wait.until(lambda d: len(handles()) == AGENTS)
        click_row("0.1")
        wait.until(lambda d: node_count() == 21)
        wait.until(lambda d: "Update Running" in text_of("events"))
        driver.find_element(By.ID, "btn-pause").click()
        wait.until(lambda d: text_of("run-state") == "paused")
        status, body = request(url, "/api/state", {"X-Ebt-Token": TOKEN})
        assert body["paused"] is True, body
        driver.find_element(By.ID, "btn-resume").click()
        wait.until(lambda d: text_of("run-state") == "running")
        logs = severe_logs(driver)
        assert not logs, logs
        driver.get("about:blank")  # (the page would go on asking the stopped arena)
    finally:
        if proc.poll() is None:
            stop_arena(proc)


def check_read_only(arena, driver):
    proc, url = start_arena(arena, AGENTS, ["--inspect-read-only"])
    try:
        assert "?" not in url, url
        wait = WebDriverWait(driver, 30, poll_frequency=0.1)
        driver.get(url)
        assert driver.title == "ebt inspector", driver.title
        text_of, handles, node_count, click_row = page_helpers(driver)
        displayed = lambda i: driver.find_element(By.ID, i).is_displayed()
        wait.until(lambda d: len(handles()) == AGENTS)
        click_row("0.1")
        wait.until(lambda d: node_count() == 21)
        # The page says read-only and offers no command.
        wait.until(lambda d: displayed("read-only"))
        for button in ("btn-pause", "btn-resume", "btn-step", "btn-abort", "write-form"):
            assert not displayed(button), button
        value = lambda: driver.execute_script(
            "const c = document.querySelector(\"#bb tr[data-key='health_low'] td.value\");"
            "return c ? c.textContent : null")
        wait.until(lambda d: value() in ("false", "true"))
        before = value()
        after = "true" if before == "false" else "false"

        # Commands sent anyway (as the page would send them): 403, nothing queued, nothing changed.
        command = {"X-Ebt-Inspector": "1"}
        for path, body in (("/api/pause", {}), ("/api/write", {"handle": "0.1", "key": "health_low", "value": after})):
            status, answer = request(url, path, command, body)
            assert status == 403, (path, status, answer)
            assert answer["error"] == ("the inspector is read-only (InspectorOptions::read_only): %s is disabled"
                                       % path), answer
        status, state = request(url, "/api/state")
        assert status == 200 and state["read_only"] is True and state["paused"] is False, state
        frame = int(text_of("frame"))
        wait.until(lambda d: int(text_of("frame")) >= frame + 5)  # still running
        assert value() == before, (value(), before)
        logs = severe_logs(driver)
        assert not logs, logs
    finally:
        if proc.poll() is None:
            stop_arena(proc)


def main():
    if len(sys.argv) != 2:
        raise SystemExit("usage: inspector_security_test.py EBT_ARENA")
    arena = sys.argv[1]
    driver = open_browser()
    try:
        check_token(arena, driver)
        check_read_only(arena, driver)
    finally:
        driver.quit()
    print("inspector security browser test: OK")


if __name__ == "__main__":
    main()
