#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The operator console in a real browser (headless Chromium driven by Selenium), run by ctest.

  browser_test.py TRELLIS DRAFT_REVIEW_REVISE REFUND_AGENT GATED_YAML SCREENSHOT_DIR

On a temporary FileStore: draft_review_revise's run-7 and refund_agent's r-big wait for an
approval, and a run of a graph file whose input is markup waits too. `trellis serve` serves the
store; the browser signs in with the URL it prints, reads the inbox and the proposed input,
approves run-7 and rejects r-big with a reason, sees both change status, resumes run-7 with its
program and sees it succeed, cancels the third run after the confirmation, and checks that a
form posted without its CSRF token, a request without a token and a state value holding
<script> do no harm. Screenshots of the runs page, a run page and the inbox go to
SCREENSHOT_DIR (scripts/screenshots.sh copies them to docs/images/).
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

try:
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError:
    print("SKIP: no Selenium (Debian: python3-selenium; scripts/deps.sh installs it)")
    sys.exit(77)
if not (shutil.which("chromium") and shutil.which("chromedriver")):
    print("SKIP: no Chromium (Debian: chromium, chromium-driver; scripts/deps.sh installs them)")
    sys.exit(77)

trellis, drr, refund, gated, shots = (os.path.abspath(a) for a in sys.argv[1:6])
work = tempfile.mkdtemp(prefix="trellis_browser.")
store = os.path.join(work, "runs")
env = dict(os.environ, TRELLIS_USER="ana")
server = None
driver = None


def gone(element):
    """A wait condition: `element`'s page was replaced. Selenium's staleness_of expects a
    StaleElementReferenceException only; while the next page replaces the document, Chromium
    may answer with another error for the old node ("Node with given id does not belong to the
    document"): any error about the element means it is gone."""
    def check(_driver):
        try:
            element.is_enabled()
            return False
        except WebDriverException:
            return True
    return check


def fail(message):
    print("FAIL: " + message, file=sys.stderr)
    if server is not None:
        server.kill()
        print("--- trellis serve:\n" + server.stdout.read(), file=sys.stderr)
    sys.exit(1)


def run(*args, want=0):
    p = subprocess.run(list(args), env=env, capture_output=True, text=True, cwd=work)
    if p.returncode != want:
        fail(f"{' '.join(args)} exited with {p.returncode}, not {want}:\n{p.stdout}{p.stderr}")
    return p.stdout


def show(run_id):
    return json.loads(run(trellis, "--store", store, "-o", "json", "runs", "show", run_id))


def status(run_id):
    return show(run_id)["run"]["status"]


try:
    # Three runs that wait for a decision, in one store.
    run(drr, "--store", store)
    run(refund, work, "start", "r-big", "500")
    run(trellis, "--store", store, "run", gated, "--run-id", "x-1", "--work-dir",
        os.path.join(work, "gated"), "--input", "what=<script>window.pwned=1</script>")
    for r in ("run-7", "r-big", "x-1"):
        if status(r) != "WaitingApproval":
            fail(f"{r} does not wait for approval")
    # And a refund cut off by a kill after the payment, before its receipt: in doubt.
    run("env", "TRELLIS_FAILPOINT=effect.after_call", refund, work, "start", "r-cut", "60",
        want=-9)  # killed by its failpoint (SIGKILL)
    run(refund, work, "resume", "r-cut", want=3)
    if show("r-cut")["run"]["reason"] != "reconciliation_required":
        fail("r-cut did not fail with reconciliation_required")

    server = subprocess.Popen([trellis, "serve", "--store", store, "--port", "0"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    login = None
    for _ in range(2):
        line = server.stdout.readline()
        if line.startswith("sign in: "):
            login = line[len("sign in: "):].strip()
    if not login:
        fail("trellis serve printed no sign-in URL")
    base = login.split("/login")[0]

    # No token, no console: a page sends to the sign-in page, the API answers 401.
    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    opener = urllib.request.build_opener(NoRedirect)
    for path, want in (("/approvals", 302), ("/api/v1/runs", 401)):
        try:
            code = opener.open(base + path).status
        except urllib.error.HTTPError as e:
            code = e.code
        if code != want:
            fail(f"{path} without a token answered {code}, not {want}")

    options = Options()
    for arg in ("--headless=new", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1280,1000"):
        options.add_argument(arg)
    if os.geteuid() == 0:
        options.add_argument("--no-sandbox")
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver") or
                                              "/usr/bin/chromedriver"), options=options)
    driver.set_page_load_timeout(30)
    wait = WebDriverWait(driver, 10)

    driver.get(login)  # signs in, then shows the runs
    wait.until(ec.presence_of_element_located((By.ID, "runs")))
    if driver.find_element(By.ID, "user").text != "ana":
        fail("the page does not say who is signed in")
    rows = driver.find_elements(By.CSS_SELECTOR, "#runs tbody tr")
    if len(rows) != 4:
        fail(f"the runs page lists {len(rows)} runs, not 4")
    os.makedirs(shots, exist_ok=True)
    driver.save_screenshot(os.path.join(shots, "runs.png"))

    # The inbox: three requests; run-7's proposed input is the one the store holds.
    driver.get(base + "/approvals")
    blocks = {b.get_attribute("data-run"): b
              for b in driver.find_elements(By.CSS_SELECTOR, "div.request")}
    if sorted(blocks) != ["r-big", "run-7", "x-1"]:
        fail(f"the inbox shows {sorted(blocks)}")
    proposed = json.loads(blocks["run-7"].find_element(By.CSS_SELECTOR, "pre.proposed").text)
    if proposed != show("run-7")["request"]["proposed_input"]:
        fail("the inbox's proposed input for run-7 is not the stored one")
    driver.save_screenshot(os.path.join(shots, "inbox.png"))

    # Approve run-7 with a comment.
    form = blocks["run-7"].find_element(By.CSS_SELECTOR, "form.approve")
    form.find_element(By.NAME, "comment").send_keys("looks right")
    form.find_element(By.CSS_SELECTOR, "button").click()
    wait.until(gone(form))  # the next page is loaded
    # Reject r-big with a reason.
    block = next(b for b in driver.find_elements(By.CSS_SELECTOR, "div.request")
                 if b.get_attribute("data-run") == "r-big")
    form = block.find_element(By.CSS_SELECTOR, "form.reject")
    form.find_element(By.NAME, "reason").send_keys("refund too large without a receipt")
    form.find_element(By.CSS_SELECTOR, "button").click()
    wait.until(gone(form))
    left = [b.get_attribute("data-run") for b in driver.find_elements(By.CSS_SELECTOR, "div.request")]
    if left != ["x-1"]:
        fail(f"after two decisions the inbox shows {left}")

    decided = show("run-7")
    if decided["run"]["status"] != "Queued" or decided["decision"]["by"] != "ana" or \
            decided["decision"]["comment"] != "looks right":
        fail(f"run-7 after the approval: {decided['run']['status']}, {decided['decision']}")
    rejected = show("r-big")
    if rejected["run"]["status"] != "Failed" or rejected["decision"]["kind"] != "reject" or \
            rejected["decision"]["reason"] != "refund too large without a receipt":
        fail(f"r-big after the rejection: {rejected['run']['status']}, {rejected['decision']}")
    driver.get(base + "/runs/r-big")
    if driver.find_element(By.ID, "status").text != "Failed":
        fail("r-big's page does not show Failed")

    # The program resumes run-7: the page shows it succeeded.
    run(drr, "--store", store, "resume", "run-7")
    driver.get(base + "/runs/run-7")
    if driver.find_element(By.ID, "status").text != "Succeeded":
        fail("run-7's page does not show Succeeded after the resume")
    if not driver.find_elements(By.CSS_SELECTOR, "#timeline tbody tr"):
        fail("run-7's page has no timeline")
    driver.save_screenshot(os.path.join(shots, "run.png"))

    # Markup in a state value is text: shown, never run.
    driver.get(base + "/runs/x-1")
    if driver.execute_script("return window.pwned === undefined") is not True:
        fail("a state value's <script> ran")
    if "<script>window.pwned=1</script>" not in driver.find_element(By.ID, "state").text:
        fail("x-1's state does not show its input as text")

    # A form posted without its CSRF token is refused, and nothing is written.
    seq = show("x-1")["run"]["seq"]
    request = show("x-1")["request"]["id"]
    driver.execute_script(
        "var f=document.createElement('form');f.method='post';f.action='/runs/x-1/decision';"
        "[['request',arguments[0]],['decision','approve']].forEach(function(p){"
        "var i=document.createElement('input');i.type='hidden';i.name=p[0];i.value=p[1];"
        "f.appendChild(i);});document.body.appendChild(f);f.submit();", request)
    wait.until(ec.presence_of_element_located((By.ID, "error")))
    if "CSRF" not in driver.find_element(By.ID, "error").text:
        fail("a form without its CSRF token was not refused")
    if show("x-1")["run"]["seq"] != seq:
        fail("a form without its CSRF token wrote to the run")

    # Cancel x-1: the console asks first, then cancels.
    driver.get(base + "/runs/x-1")
    cancel = driver.find_element(By.ID, "cancel")
    cancel.find_element(By.NAME, "reason").send_keys("not this one")
    cancel.find_element(By.CSS_SELECTOR, "button").click()
    wait.until(ec.presence_of_element_located((By.ID, "confirm")))
    if status("x-1") != "WaitingApproval":
        fail("x-1 was cancelled before the confirmation")
    driver.find_element(By.CSS_SELECTOR, "#confirm button").click()
    wait.until(ec.presence_of_element_located((By.ID, "status")))
    if driver.find_element(By.ID, "status").text != "Cancelled":
        fail("x-1's page does not show Cancelled")
    cancelled = show("x-1")
    if cancelled["cancel_requests"][0]["by"] != "ana":
        fail(f"x-1's cancellation is recorded as {cancelled['cancel_requests']}")

    # Reconcile r-cut on its page: the payment happened (the ledger says so); after the
    # confirmation the run reopens, and its program finishes it without paying again.
    driver.get(base + "/runs/r-cut")
    form = driver.find_element(By.ID, "reconcile")
    form.find_element(By.CSS_SELECTOR, "input[name=happened][value=yes]").click()
    result = form.find_element(By.NAME, "result")
    result.clear()
    result.send_keys('{"refund_id":"rf-1"}')
    form.find_element(By.NAME, "reason").send_keys("payments ledger line 1")
    form.find_element(By.CSS_SELECTOR, "button").click()
    wait.until(ec.presence_of_element_located((By.ID, "confirm")))
    if show("r-cut")["run"]["reason"] != "reconciliation_required":
        fail("r-cut was reconciled before the confirmation")
    driver.find_element(By.CSS_SELECTOR, "#confirm button").click()
    wait.until(ec.presence_of_element_located((By.ID, "status")))
    reopened = show("r-cut")
    if reopened["run"]["status"] != "Queued" or reopened["reconciliation"]["by"] != "ana":
        fail(f"r-cut after the reconciliation: {reopened['run']['status']}, "
             f"{reopened['reconciliation']}")
    out = run(refund, work, "resume", "r-cut")
    if "refund rf-1 of 60.00 paid" not in out:
        fail("r-cut did not finish from the reconciled receipt:\n" + out)
    with open(os.path.join(work, "payments.ledger")) as ledger:
        if len(ledger.readlines()) != 1:
            fail("the refund was paid again")
    print("browser: inbox, approve, reject, resume, cancel, reconcile, CSRF, markup: ok; "
          "screenshots in " + shots)
finally:
    if driver is not None:
        driver.quit()
    if server is not None and server.poll() is None:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
    shutil.rmtree(work, ignore_errors=True)
