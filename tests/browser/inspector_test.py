#!/usr/bin/python3
"""The live inspector in a real browser (headless chromium driven by selenium).

    /usr/bin/python3 tests/browser/inspector_test.py BUILD/bin/ebt_arena [--save-screenshot FILE]
    /usr/bin/python3 tests/browser/inspector_test.py BUILD/bin/ebt_arena --screenshot FILE

Starts `ebt_arena --agents 24 --inspect 0` (the server binds 127.0.0.1 on a free port and the
arena prints its URL), opens the page and checks, through the page only: the agent list and its
search, selecting an agent (its tree drawn, its statuses), pause (the frame counter stops), single
step (it advances by exactly one), writing a blackboard key (a wrong value shows the error, a good
one shows the value), aborting the agent (its running node turns Aborted, the events say so),
resume; then an attacking guard (found by searching the list for "Attack"): paused, health_low=true
written from the page, one step, and its tree switches branch (Attack Aborted, Runaway Running);
--save-screenshot FILE saves the page at that point. Then it stops the arena with SIGINT and expects
a clean exit. (--screenshot FILE only takes the README's picture, docs/pictures/inspector.png.)

Exit status 77 (CTest: skipped) with a message when selenium, chromium or chromedriver is missing,
unless EBT_REQUIRE_BROWSER=1 (CI), where that is a failure (tests/browser/inspector_support.py). Run
with Debian's /usr/bin/python3 (python3-selenium installs there). The token and read-only options:
inspector_security_test.py.
"""
import sys
import time

from inspector_support import (By, NoSuchElementException, Select, StaleElementReferenceException,
                               WebDriverWait, open_browser, start_arena, stop_arena)


def main():
    args = sys.argv[1:]
    if not args:
        raise SystemExit("usage: inspector_test.py EBT_ARENA [--screenshot FILE] [--agents N]")
    arena = args[0]
    screenshot = args[args.index("--screenshot") + 1] if "--screenshot" in args else None
    save_screenshot = args[args.index("--save-screenshot") + 1] if "--save-screenshot" in args else None
    agents = int(args[args.index("--agents") + 1]) if "--agents" in args else 24

    proc, url = start_arena(arena, agents)
    driver = None
    try:
        driver = open_browser()
        wait = WebDriverWait(driver, 30, poll_frequency=0.1)
        driver.get(url)
        assert driver.title == "ebt inspector", driver.title
        # The page redraws its lists a few times a second: read them in one script call each, and
        # retry a click whose element was just replaced.
        by_id = lambda i: driver.find_element(By.ID, i)
        text_of = lambda i: driver.execute_script("return document.getElementById(arguments[0]).textContent", i)
        handles = lambda: driver.execute_script(
            "return [...document.querySelectorAll('#agents tr')].map(r => r.dataset.handle)")
        rows = lambda: driver.find_elements(By.CSS_SELECTOR, "#agents tr")
        node_count = lambda: driver.execute_script("return document.querySelectorAll('#tree-box g.node').length")
        status = lambda i: driver.execute_script(
            "const g = document.querySelector(\"#tree-box g.node[data-index='\" + arguments[0] + \"']\");"
            "return g ? g.dataset.status : null", i)
        node_text = lambda i: driver.execute_script(
            "const g = document.querySelector(\"#tree-box g.node[data-index='\" + arguments[0] + \"']\");"
            "return g ? g.querySelector('text').textContent : null", i)  # the label line
        value_cell = lambda key: driver.execute_script(
            "const c = document.querySelector(\"#bb tr[data-key='\" + arguments[0] + \"'] td.value\");"
            "return c ? c.textContent : null", key)

        def click_row(handle):
            for _ in range(50):
                try:
                    driver.find_element(By.CSS_SELECTOR, "#agents tr[data-handle='%s']" % handle).click()
                    return
                except (StaleElementReferenceException, NoSuchElementException):
                    time.sleep(0.05)
            raise SystemExit("FAIL: could not click agent " + handle)

        if screenshot:
            return take_screenshot(driver, wait, by_id, handles, click_row, screenshot)

        # The agent list: every guard, each running Patrol at the start.
        wait.until(lambda d: len(handles()) == agents)
        assert text_of("count") == str(agents)
        assert handles()[:3] == ["0.1", "1.1", "2.1"], handles()
        # Search by handle, then by the running behavior.
        by_id("search").send_keys("17.1")
        wait.until(lambda d: handles() == ["17.1"])
        by_id("search").clear()
        by_id("search").send_keys("patrol")
        running = lambda: driver.execute_script(
            "return [...document.querySelectorAll('#agents tr')].map(r => r.cells[2].textContent)")
        try:
            wait.until(lambda d: len(handles()) > 0 and set(running()) == {"Patrol"} and
                       "(%d of %d)" % (len(handles()), agents) in text_of("agents-count"))
        except Exception:
            raise SystemExit("FAIL: search 'patrol': %r %r" % (running(), text_of("agents-count")))
        by_id("search").clear()
        by_id("search").send_keys("no such behavior")
        wait.until(lambda d: len(handles()) == 0 and "(0 of %d)" % agents in text_of("agents-count"))
        by_id("search").clear()
        by_id("search").send_keys(" ")  # (a cleared field sends no input event)
        by_id("search").clear()
        wait.until(lambda d: len(handles()) == agents)

        # Select guard 0.1: its tree (21 nodes, Patrol the last) running, and its events coming in.
        click_row("0.1")
        wait.until(lambda d: node_count() == 21)
        assert "Agent 0.1" in text_of("agent-title"), text_of("agent-title")
        assert node_text(20) == "Patrol", node_text(20)
        wait.until(lambda d: status(0) == "Running")
        wait.until(lambda d: "Update Running" in text_of("events"))

        # Pause: the frame counter stops.
        by_id("btn-pause").click()
        wait.until(lambda d: text_of("run-state") == "paused")
        wait.until(lambda d: "paused at frame" in text_of("msg"))
        frame = int(text_of("frame"))
        time.sleep(1.0)  # 20 frames' worth of real time
        assert int(text_of("frame")) == frame, (text_of("frame"), frame)

        # Single step: exactly one frame.
        by_id("btn-step").click()
        wait.until(lambda d: int(text_of("frame")) == frame + 1)
        time.sleep(0.6)
        assert int(text_of("frame")) == frame + 1, (text_of("frame"), frame)
        assert text_of("run-state") == "paused"

        # Write a key: a wrong value is refused with the error shown; a right one appears.
        Select(by_id("write-key")).select_by_value("enemy_dead")
        by_id("write-value").clear()
        by_id("write-value").send_keys("banana")
        by_id("btn-write").click()
        wait.until(lambda d: "'banana' is not a bool" in text_of("msg"))
        assert by_id("msg").get_attribute("class") == "error"
        # (whether this guard has seen an enemy die by now depends on the machine's speed: write the
        # other value)
        before = value_cell("enemy_dead")
        assert before in ("false", "true"), before
        after = "true" if before == "false" else "false"
        by_id("write-value").clear()
        by_id("write-value").send_keys(after)
        by_id("btn-write").click()
        wait.until(lambda d: ("wrote enemy_dead = " + after) in text_of("msg"))
        wait.until(lambda d: value_cell("enemy_dead") == after)

        # Abort the agent: its running action (the last running node in pre-order; whatever the
        # guard is doing now, the world is paused) turns from Running to Aborted, and so does the root.
        leaf = max(i for i in range(21) if status(i) == "Running")
        label = node_text(leaf)
        assert label in ("Patrol", "Attack", "Runaway", "Respond", "Stunned", "Knockback"), node_text(leaf)
        by_id("btn-abort").click()
        wait.until(lambda d: "aborted agent 0.1" in text_of("msg"))
        wait.until(lambda d: status(leaf) == "Aborted")
        assert status(0) == "Aborted", status(0)
        wait.until(lambda d: label + ": Terminate Aborted" in text_of("events"))
        # The next frame starts the tree afresh.
        by_id("btn-step").click()
        wait.until(lambda d: int(text_of("frame")) == frame + 2)
        wait.until(lambda d: status(0) == "Running")

        # Resume: frames advance again.
        by_id("btn-resume").click()
        wait.until(lambda d: text_of("run-state") == "running")
        wait.until(lambda d: int(text_of("frame")) >= frame + 6)
        # The chart was drawn (a canvas with something on it).
        drawn = driver.execute_script(
            "const c = document.getElementById('chart');"
            "const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;"
            "let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i]) n++; return n;")
        assert drawn > 1000, drawn

        # An attacking guard (the arena's tree: 12 Runaway, 15 Attack; scenarios/arena_scenario.hpp):
        # paused first, so that the list stops changing (its rows are updated in place: a row found
        # while the world runs may show another guard by the time it is clicked), then found by its
        # running behavior, with no passive request pending (a stun or knockback from the game would
        # come first); health_low written from the page, one step: the tree switches branch.
        attackers = lambda: driver.execute_script(
            "return [...document.querySelectorAll('#agents tr')]"
            ".filter(r => r.cells[2].textContent === 'Attack').map(r => r.dataset.handle)")

        def find_attacker():
            by_id("search").clear()
            by_id("search").send_keys("Attack")
            for _ in range(20):  # guards attack in waves: look up to ~20 times, 2 s apart
                by_id("btn-pause").click()
                wait.until(lambda d: text_of("run-state") == "paused")
                time.sleep(0.6)  # the list redraws from the paused world
                for attacker in attackers()[:4]:
                    click_row(attacker)
                    try:
                        WebDriverWait(driver, 10, poll_frequency=0.1).until(
                            lambda d: ("Agent %s \u00b7" % attacker) in text_of("agent-title")
                            and node_count() == 21 and status(15) is not None)
                    except Exception:
                        continue
                    if (status(15) == "Running" and value_cell("stun_request") == "false"
                            and value_cell("knockback_request") == "false"):
                        return attacker
                by_id("btn-resume").click()
                wait.until(lambda d: text_of("run-state") == "running")
                time.sleep(2.0)
            raise SystemExit("FAIL: no guard was seen attacking")

        attacker = find_attacker()
        assert node_text(15) == "Attack" and node_text(12) == "Runaway", (node_text(15), node_text(12))
        assert status(12) != "Running", status(12)
        assert value_cell("health_low") == "false", value_cell("health_low")
        frame = int(text_of("frame"))
        Select(by_id("write-key")).select_by_value("health_low")
        by_id("write-value").clear()
        by_id("write-value").send_keys("true")
        by_id("btn-write").click()
        wait.until(lambda d: "wrote health_low = true" in text_of("msg"))
        assert status(15) == "Running", status(15)  # written, but not stepped yet
        by_id("btn-step").click()
        wait.until(lambda d: int(text_of("frame")) == frame + 1)
        wait.until(lambda d: status(12) == "Running")
        assert status(15) == "Aborted", status(15)
        wait.until(lambda d: "Attack: Terminate Aborted" in text_of("events"))
        if save_screenshot:
            driver.save_screenshot(save_screenshot)
            with open(save_screenshot, "rb") as f:
                assert f.read(8) == b"\x89PNG\r\n\x1a\n", save_screenshot
            print("screenshot: " + save_screenshot)
        by_id("btn-resume").click()
        wait.until(lambda d: text_of("run-state") == "running")
        # No script errors and no failed request, but the refused write (400) above.
        logs = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE" and
                not ("/api/write" in e.get("message", "") and "400" in e.get("message", ""))]
        assert not logs, logs
    finally:
        if driver:
            driver.quit()
        if proc.poll() is None:
            stop_arena(proc)
    print("inspector browser test: OK")


def take_screenshot(driver, wait, by_id, handles, click_row, path):
    """For docs/pictures/inspector.png: an agent doing something, after a few seconds of history."""
    wait.until(lambda d: len(handles()) > 0)
    time.sleep(8)
    # A guard in a fight (Attack, else Runaway), looked for for up to ~40 s; else whatever runs.
    handle = None
    for attempt in range(40):
        for behavior in ("Attack", "Runaway") if attempt < 39 else ("Attack", "Runaway", "Respond", "Patrol"):
            # Selected by a click in the page's own script: the list's rows are updated in place, so
            # a row found here could show another guard by the time a click from outside reached it.
            handle = driver.execute_script(
                "const r = [...document.querySelectorAll('#agents tr')].find(r => r.cells[2].textContent === arguments[0]);"
                "if (!r) return null; r.click(); return r.dataset.handle;", behavior)
            if handle:
                break
        if handle:
            break
        time.sleep(1.0)
    # The list then shows the selected guard's row (and any whose handle contains it), highlighted.
    by_id("search").clear()
    by_id("search").send_keys(handle)
    time.sleep(3)
    driver.save_screenshot(path)
    print("screenshot: " + path)


if __name__ == "__main__":
    main()
