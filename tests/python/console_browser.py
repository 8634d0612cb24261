"""Drives the gateway's console in a real browser: Debian's headless chromium through its
chromedriver (WebDriver, with selenium), as crates/toolsearch-cli/tests/console.rs runs it.

The gateway has two sources — `python` (tests/python/upstream_server.py over streamable HTTP)
and `everything` (the reference server over stdio, started through `sh`, which refuses to start
it while the file HOLD exists) — and two clients: `ops` (admin) and `agent`. In order:
  1. a non-admin token is refused, and the sign-in form takes an admin's;
  2. Sources shows both sources ready; once `everything` is killed (with HOLD in place, so that
     its restarts fail for a while), it shows down, and why; HOLD removed, it comes back ready,
     with its restarts counted;
  3. an agent's call (the MCP SDK's client) appears in Calls, without its arguments;
  4. Tools ranks a question with keyword, bm25, semantic and hybrid, BM25's hits with reasons.
Each view is saved as a PNG under SHOTS; with DOCS, the Sources, Tools and Calls views are
copied there too (docs/images, for docs/console.md).

Usage: console_browser.py GATEWAY_URL OPS_TOKEN AGENT_TOKEN GATEWAY_PID HOLD SHOTS [DOCS]
"""

import asyncio
import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from checks import Checks, HandshakeSession, payload

HERE = Path(__file__).resolve().parent
SECRET = "s3cret-argument"


def browser(profile: str):
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    # As root, without a sandbox; and nothing of the browser's own reaches out to the network.
    for arg in [
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1360,900",
        f"--user-data-dir={profile}",
    ]:
        options.add_argument(arg)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


def wait_for(driver, what, condition, seconds=20.0):
    """Waits until `condition(driver)` is true (retrying through pages being replaced)."""

    def check(d):
        try:
            return condition(d)
        except StaleElementReferenceException:
            return False

    try:
        return WebDriverWait(driver, seconds, poll_frequency=0.1).until(check)
    except TimeoutException:
        print(f"FAILED: {what}: the page was:\n{driver.page_source[:4000]}", file=sys.stderr)
        raise SystemExit(1)


def row(driver, source):
    return driver.find_element(By.CSS_SELECTOR, f'tr[data-source="{source}"]')


def status_of(driver, source):
    return row(driver, source).find_element(By.CSS_SELECTOR, "td.status").text


def child_running(parent: int, marker: str) -> int:
    """The pid of `parent`'s child whose command line holds `marker`."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == parent and marker in cmdline:
            return int(entry.name)
    raise SystemExit(f"FAILED: no child of {parent} runs {marker}")


async def agent_call(url: str, token: str):
    async with HandshakeSession(url, {"Authorization": f"Bearer {token}"}) as session:
        result = await session.call_tool(
            "call_tool", {"group": "python", "tool": "shout", "arguments": {"text": SECRET}}
        )
        return payload(result)


def main(url, ops, agent, gateway_pid, hold, shots, docs=None) -> int:
    check = Checks()
    base = url.rstrip("/").removesuffix("/mcp")
    shots = Path(shots)
    shots.mkdir(parents=True, exist_ok=True)

    def shot(driver, name):
        path = shots / f"console-{name}.png"
        driver.save_screenshot(str(path))
        if docs and name in ("sources", "tools", "calls"):
            shutil.copy(path, Path(docs) / path.name)

    profile = tempfile.mkdtemp(prefix="toolsearch-console-")
    driver = browser(profile)
    try:
        # 1. Signing in: a non-admin's token is refused; an admin's opens the console.
        driver.get(f"{base}/ui/")
        wait_for(driver, "the sign-in form", lambda d: d.find_elements(By.ID, "login"))
        check("data-source" not in driver.page_source, "no data before signing in", "")
        shot(driver, "sign-in")
        driver.find_element(By.ID, "token").send_keys(agent)
        driver.find_element(By.CSS_SELECTOR, "#login button").click()
        wait_for(
            driver,
            "a non-admin refused",
            lambda d: "not an admin" in d.find_element(By.ID, "why").text,
        )
        check(not driver.find_elements(By.ID, "sources"), "a non-admin sees no source", "")
        stored = driver.execute_script("return sessionStorage.getItem('toolsearch-console-token')")
        check(stored is None, "a refused token forgotten", stored)
        driver.get(f"{base}/ui/")
        wait_for(driver, "the sign-in form again", lambda d: d.find_elements(By.ID, "login"))
        driver.find_element(By.ID, "token").send_keys(ops)
        driver.find_element(By.CSS_SELECTOR, "#login button").click()

        # 2. Sources: both ready; the upstream killed shows down; back, it shows ready.
        wait_for(
            driver,
            "both sources ready",
            lambda d: status_of(d, "python") == "ready" and status_of(d, "everything") == "ready",
        )
        stored = driver.execute_script("return sessionStorage.getItem('toolsearch-console-token')")
        check(stored == ops, "the token kept in session storage", "")
        check(
            not driver.get_cookies(),
            "no cookie",
            driver.get_cookies(),
        )
        shot(driver, "sources")
        Path(hold).touch()
        os.kill(child_running(gateway_pid, "server-everything"), signal.SIGKILL)
        wait_for(
            driver,
            "the killed upstream shown down",
            lambda d: status_of(d, "everything").startswith("down"),
            seconds=30,
        )
        check(status_of(driver, "python") == "ready", "the other source stays ready", "")
        print(f"shown while down: {status_of(driver, 'everything')!r}")
        shot(driver, "sources-down")
        Path(hold).unlink()
        wait_for(
            driver,
            "the upstream shown ready again",
            lambda d: status_of(d, "everything") == "ready",
            seconds=60,
        )
        restarts = int(row(driver, "everything").find_elements(By.CSS_SELECTOR, "td.n")[1].text)
        check(restarts >= 1, "the restarts counted", restarts)

        # 3. An agent's call appears in Calls, without its arguments.
        shouted = asyncio.run(agent_call(url, agent))
        check(shouted == SECRET.upper(), "the agent's call answered", shouted)
        driver.find_element(By.LINK_TEXT, "Calls").click()
        wait_for(
            driver,
            "the call listed",
            lambda d: any(
                r.find_element(By.CSS_SELECTOR, "td.tool").text == "shout"
                and "agent" in r.text
                and r.find_element(By.CSS_SELECTOR, "td.outcome").text == "ok"
                for r in d.find_elements(By.CSS_SELECTOR, "#calls tbody tr")
            ),
        )
        source = driver.page_source
        check(
            SECRET not in source and SECRET.upper() not in source,
            "no argument or result shown",
            "",
        )
        shot(driver, "calls")
        driver.find_element(By.LINK_TEXT, "Sources").click()
        wait_for(
            driver,
            "the call counted for its source",
            lambda d: row(d, "python").find_element(By.CSS_SELECTOR, "td.calls").text == "1",
        )

        # 4. Tools: one question ranked by every method, side by side.
        driver.find_element(By.LINK_TEXT, "Tools").click()
        wait_for(driver, "the search box", lambda d: d.find_elements(By.NAME, "q"))
        box = driver.find_element(By.NAME, "q")
        box.send_keys("upper-case some text")
        driver.find_element(By.CSS_SELECTOR, "form.search button").click()
        wait_for(
            driver,
            "every method's ranking",
            lambda d: len(d.find_elements(By.CSS_SELECTOR, "#ranked section")) == 4,
            seconds=60,
        )
        methods = [
            s.get_attribute("data-method")
            for s in driver.find_elements(By.CSS_SELECTOR, "#ranked section")
        ]
        check(methods == ["keyword", "bm25", "semantic", "hybrid"], "every method", methods)
        for method in ["bm25", "semantic", "hybrid"]:
            first = driver.find_element(
                By.CSS_SELECTOR, f'#ranked section[data-method="{method}"] li'
            )
            check("python/shout" in first.text, f"{method} ranks shout first", first.text)
        why = driver.find_element(
            By.CSS_SELECTOR, '#ranked section[data-method="bm25"] li .why'
        ).text
        check("(description" in why or "(name" in why, "BM25's reasons shown", why)
        check("fusion rrf" in driver.page_source, "hybrid's fusion shown", "")
        fused = driver.find_element(
            By.CSS_SELECTOR, '#ranked section[data-method="hybrid"] li .why'
        ).text
        check(fused.startswith("fused from bm25 #1, semantic #1"), "hybrid's sides shown", fused)
        check(
            driver.execute_script("return sessionStorage.getItem('toolsearch-console-token')")
            == ops,
            "still signed in after navigating",
            "",
        )
        shot(driver, "tools")
        driver.find_element(By.CSS_SELECTOR, '#ranked section[data-method="bm25"] li a').click()
        wait_for(
            driver,
            "the tool's definition",
            lambda d: "python__shout" in d.find_element(By.ID, "tool").text,
        )
        check(
            "delay_ms" in driver.find_element(By.ID, "input-schema").text,
            "its input schema",
            "",
        )
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
    print(f"{check.passed} passed, 0 failed")
    return 0


if __name__ == "__main__":
    a = sys.argv[1:]
    sys.exit(main(a[0], a[1], a[2], int(a[3]), a[4], a[5], a[6] if len(a) > 6 else None))
