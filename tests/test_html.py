"""The trace explorer (`check --html DIR`): its data pinned by golden files, the page
self-contained and safe against what a model names, and the page itself driven in a
real headless Chromium (Selenium): load it, step through a lasso and an lkmm trace,
compare two traces, and check that what is shown is the trace's own values.

Screenshots go to tests/artifacts/explorer/ (git ignores it; TIMERACE_ARTIFACTS moves
it), for CI to keep.

To accept a change of the data: TIMERACE_UPDATE_GOLDEN=1 .venv/bin/python -m pytest
tests/test_html.py, then read `git diff tests/golden/html`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from pathlib import Path

import pytest

from checker.export.html import data_json, page, page_data, write_html
from checker.pipeline import Options, check_spec, load
from checker.results.trace import Buffered, show_value
from helpers import GOLDEN, MODELS, lasso_result, run_check, workdir
from shared_runs import checked
from tools import chromium

UPDATE = os.environ.get("TIMERACE_UPDATE_GOLDEN") == "1"
ROOT = Path(__file__).parent.parent
ARTIFACTS = Path(os.environ.get("TIMERACE_ARTIFACTS", Path(__file__).parent / "artifacts")) / "explorer"

# store buffering: both loads miss the other CPU's store under x86-TSO and under the LKMM
SB = """// SB: both loads can miss the other CPU's store under x86-TSO, never under sc
model sb;
memory tso;
var x: 0..1 = 0;
var y: 0..1 = 0;
process p0 { var r0: 0..1; x = 1; r0 = y; }
process p1 { var r1: 0..1; y = 1; r1 = x; }
final forbidden: !(p0.r0 == 0 && p1.r1 == 0);
expect violated forbidden;
variant lkmm { memory lkmm; } expect violated forbidden;
"""


def shown(v) -> str:
    """A value as the page shows it: as the text output does, an empty store buffer or
    view said so."""
    return "[] (empty)" if isinstance(v, Buffered) and not v else show_value(v)


def sb_result(folder: Path):
    (folder / "models").mkdir(parents=True, exist_ok=True)
    (folder / "models" / "sb.spec").write_text(SB)
    with workdir(folder):
        return check_spec(load("models/sb.spec"), Options())


def results(tmp_path: Path) -> dict:
    out = {}
    for model in ("counter", "wakeup"):
        (tmp_path / model / "models").mkdir(parents=True)
        (tmp_path / model / "models" / f"{model}.spec").write_bytes((MODELS / f"{model}.spec").read_bytes())
        with workdir(tmp_path / model):
            out[model] = check_spec(load(f"models/{model}.spec"), Options())
    out["spin-lasso"] = lasso_result(tmp_path / "spin")
    out["sb"] = sb_result(tmp_path / "sb")
    return out


def test_the_explorer_data_matches_its_golden_files(tmp_path):
    folder = GOLDEN / "html"
    for name, result in results(tmp_path).items():
        text = data_json(result)
        path = folder / f"{name}.data.json"
        if UPDATE:
            folder.mkdir(exist_ok=True)
            path.write_text(text)
            continue
        assert path.is_file(), f"no golden file {path}: run with TIMERACE_UPDATE_GOLDEN=1"
        assert text == path.read_text(), f"{path.name} differs from its golden file (see the module docstring)"


def test_every_step_of_the_data_is_the_trace_itself(tmp_path):
    """The data is the result's, not a second computation: each state is the trace's
    state, each step's changes the action's, buffers and views apart from variables."""
    result = sb_result(tmp_path)
    doc = page_data(result)
    assert len(doc["traces"]) == 2 and {t["memory"] for t in doc["traces"]} == {"tso", "lkmm"}
    found = [(v, o) for v in result.variants for o in v.outcomes if o.counterexample]
    for t, (v, o) in zip(doc["traces"], found):
        trace = o.counterexample.trace
        assert len(t["states"]) == len(trace.states) and len(t["steps"]) == trace.steps
        names = t["variables"] + t["buffers"]
        for values, s in zip(t["states"], trace.states):
            assert values == [shown(s.get(k)) for k in names]
        for step, a in zip(t["steps"], trace.actions):
            assert step["text"] == " ".join(a.text.split()) and step["process"] == a.process
            assert step["line"] == (a.span.line if a.span else None)
            assert [c.split(" = ")[0] for c in step["changes"]] == [k for k, _ in a.changes]
        prefix = "sb(" if v.memory == "tso" else "view("
        assert t["buffers"] and all(b.startswith(prefix) for b in t["buffers"])
        assert not any(n.startswith(("sb(", "view(")) for n in t["variables"])
        if v.memory == "tso":
            assert "memory" in t["columns"], "flushes have a column of their own"


@pytest.mark.xdist_group("hv_timer_advance")  # reads hv_timer_advance's shared search (shared_runs)
def test_each_table_row_opens_its_own_trace():
    """Lemmas' counterexamples (values, no steps) have no pane: every other row points at
    its own trace."""
    result = checked(ROOT / "models" / "hv_timer_advance.spec", variants=("base", "unguarded"))
    doc = page_data(result)
    assert any(r["kind"] == "lemma" and r["verdict"] == "violated" for r in doc["table"])
    assert any(r["trace"] is not None for r in doc["table"])
    for r in doc["table"]:
        if r["trace"] is not None:
            t = doc["traces"][r["trace"]]
            assert (t["variant"], t["property"]) == (r["variant"], r["property"])
        else:
            assert r["kind"] == "lemma" or r["verdict"] != "violated"


def test_the_page_is_self_contained_and_names_cannot_write_markup(tmp_path):
    result = sb_result(tmp_path)
    v = result.variants[0]
    o = v.outcomes[0]
    evil = "</script><script>alert(1)</script><!--"
    cx = dataclasses.replace(o.counterexample, message=evil)
    result = dataclasses.replace(result, model="sb</title>", variants=(
        dataclasses.replace(v, outcomes=(dataclasses.replace(o, counterexample=cx),)),))
    text = page(result)
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text), "nothing is fetched from the network"
    assert "<link" not in text and "<script src" not in text
    assert evil not in text and "sb</title>" not in text
    data = re.search(r'<script type="application/json" id="data">(.*?)</script>', text, re.S).group(1)
    assert json.loads(data)["traces"][0]["message"] == evil
    assert text.count("<script") == 2 and text.count("</script>") == 2


def test_check_writes_one_page_per_run(tmp_path):
    rc, out, err = run_check(tmp_path, "counter", "--html", "out/html")
    assert rc == 0, err
    assert sorted(p.name for p in (tmp_path / "out" / "html").iterdir()) == ["counter.html"]
    assert "out/html/counter.html" in err
    rc, _, err = run_check(tmp_path, "counter", "--html", "models/counter.spec")
    assert rc == 2 and "--html" in err and "not a folder" in err


# ---- in the browser ---------------------------------------------------------------


@pytest.fixture(scope="module")
def browser():
    binary, driver_path = chromium()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for arg in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--no-first-run", "--window-size=1600,1000"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def shot(driver, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    driver.execute_script("document.getElementById('variants').open = false; window.scrollTo(0, 0)")
    driver.save_screenshot(str(ARTIFACTS / f"{name}.png"))
    driver.execute_script("document.getElementById('variants').open = true")


def open_page(driver, result, folder: Path):
    from selenium.webdriver.common.by import By

    (path,) = write_html(result, str(folder))
    driver.get(Path(path).resolve().as_uri())
    assert driver.find_element(By.ID, "title").text.startswith(f"timerace: model {result.model}")
    return By


def choose(driver, pane: str, k: int) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    Select(driver.find_element(By.CSS_SELECTOR, f"#{pane} select.choose")).select_by_value(str(k))


def shown_state(driver, pane: str, table: str) -> tuple[dict, set]:
    from selenium.webdriver.common.by import By

    values, changed = {}, set()
    for row in driver.find_elements(By.CSS_SELECTOR, f"#{pane} table.{table} tr"):
        name = row.get_attribute("data-name")
        values[name] = row.find_element(By.CSS_SELECTOR, "td.value").text
        if "changed" in row.get_attribute("class").split():
            changed.add(name)
    return values, changed


@pytest.mark.xdist_group("pi_timer")  # reads pi_timer's shared search (shared_runs)
def test_stepping_through_a_shipped_models_lasso(browser, tmp_path):
    """pi_timer's no_kick_hlt_exits: the vCPU is never woken, a lasso. Each step shows
    the trace's values, what that step changed is highlighted, the loop is marked."""
    result = checked(ROOT / "models" / "pi_timer.spec", variants=("no_kick_hlt_exits", "base"))
    By = open_page(browser, result, tmp_path)
    doc = page_data(result)
    k = next(i for i, t in enumerate(doc["traces"]) if t["loop_start"] is not None)
    cx = next(o.counterexample for v in result.variants for o in v.outcomes
              if o.counterexample is not None and o.counterexample.trace.loop_start is not None)
    t = cx.trace
    choose(browser, "left", k)
    rows = browser.find_elements(By.CSS_SELECTOR, "#left table.race tr.step-row")
    assert len(rows) == t.steps + 1  # the initial state, then every step
    assert len(browser.find_elements(By.CSS_SELECTOR, "#left table.race tr.loop")) == t.length - t.loop_start
    banners = [b.text for b in browser.find_elements(By.CSS_SELECTOR, "#left table.race tr.banner")]
    assert banners[-1].startswith(f"back to step {t.loop_start + 1}")
    columns = [c.text for c in browser.find_elements(By.CSS_SELECTOR, "#left table.race th")][1:]
    assert columns == doc["traces"][k]["columns"] and "vcpu" in columns
    nxt = browser.find_element(By.CSS_SELECTOR, "#left button.next")
    for n in range(1, t.length + 1):
        nxt.click()
        if n not in (1, 2, 5, t.loop_start, t.length):
            continue
        a = t.actions[n - 1]
        at = browser.find_element(By.CSS_SELECTOR, "#left .at").text
        assert at.startswith(f"step {n} of {t.steps}: {a.process}")
        selected = browser.find_element(By.CSS_SELECTOR, "#left table.race tr.selected")
        assert selected.get_attribute("data-step") == str(n)
        assert " ".join(a.text.split()) in selected.text and f"line {a.span.line}" in selected.text
        values, changed = shown_state(browser, "left", "variables")
        assert values == {k: show_value(v) for k, v in t.states[n].values}
        assert changed == {k for k, _ in a.changes}
        if n == 5:
            shot(browser, "pi_timer-lasso-step5")
    assert "(in the loop)" in browser.find_element(By.CSS_SELECTOR, "#left .at").text
    assert "the loop closes" in browser.find_element(By.CSS_SELECTOR, "#left .state").text
    nxt.click()  # past the end: stays on the last step
    assert browser.find_element(By.CSS_SELECTOR, "#left .at").text.startswith(f"step {t.length} of")
    browser.find_element(By.CSS_SELECTOR, "#left button.first").click()
    assert browser.find_element(By.CSS_SELECTOR, "#left .at").text.startswith("initial state")
    assert shown_state(browser, "left", "variables")[1] == set()
    browser.find_element(By.CSS_SELECTOR, "#left button.end").click()
    shot(browser, "pi_timer-lasso-end")


@pytest.mark.xdist_group("pi_timer")  # reads pi_timer's shared search (shared_runs)
def test_a_shipped_models_lkmm_lasso_shows_each_cpus_view(browser, tmp_path):
    """pi_timer's base_lkmm: the vCPU misses the timer under the LKMM; at each step the
    views panel is the trace's own `view(cpu)` values."""
    result = checked(ROOT / "models" / "pi_timer.spec", variants=("base_lkmm",))
    By = open_page(browser, result, tmp_path)
    doc = page_data(result)
    k = next(i for i, t in enumerate(doc["traces"]) if t["loop_start"] is not None)
    t = next(o.counterexample.trace for o in result.variants[0].outcomes
             if o.counterexample is not None and o.counterexample.trace.loop_start is not None)
    choose(browser, "left", k)
    views = [name for name, _ in t.states[0].values if name.startswith("view(")]
    assert views == ["view(cpu0)", "view(cpu1)"]  # a view is a CPU's: the thread's and the hrtimer's
    for n in range(1, t.length + 1):
        browser.find_element(By.CSS_SELECTOR, "#left button.next").click()
        if n in (1, 7, 8, t.length):
            values, changed = shown_state(browser, "left", "buffers")
            assert values == {name: shown(t.states[n].get(name)) for name in views}
            assert changed == {name for name, _ in t.actions[n - 1].changes if name in views}
        if n == 7:
            assert values["view(cpu1)"] != "[] (empty)"  # CPU 1 still reads the old mode
            shot(browser, "pi_timer-base_lkmm-step7")


def test_an_lkmm_trace_shows_each_cpus_view_and_two_traces_side_by_side(browser, tmp_path):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    result = sb_result(tmp_path / "model")
    By = open_page(browser, result, tmp_path / "html")
    doc = page_data(result)
    lk = next(i for i, t in enumerate(doc["traces"]) if t["memory"] == "lkmm")
    tso = next(i for i, t in enumerate(doc["traces"]) if t["memory"] == "tso")
    cx = next(o.counterexample for v in result.variants if v.memory == "lkmm" for o in v.outcomes
              if o.counterexample is not None)
    choose(browser, "left", lk)
    heads = [h.text for h in browser.find_elements(By.CSS_SELECTOR, "#left .state h3")]
    assert "LKMM views (stale reads per CPU)" in heads
    views = [k for k, _ in cx.trace.states[0].values if k.startswith("view(")]
    assert views
    seen_stale = False
    for n, a in enumerate(cx.trace.actions, 1):
        ActionChains(browser).send_keys(Keys.ARROW_RIGHT).perform()
        values, changed = shown_state(browser, "left", "buffers")
        assert list(values) == views
        assert values == {k: shown(cx.trace.states[n].get(k)) for k in views}
        assert changed == {k for k, _ in a.changes if k in views}
        seen_stale |= any(v != "[] (empty)" for v in values.values())
    assert seen_stale, "some CPU reads an older store at some step"
    # the tso trace beside it, stepped on its own (shift + arrow steps the right pane)
    choose(browser, "right", tso)
    titles = [h.text for h in browser.find_elements(By.CSS_SELECTOR, ".pane h3.trace-title")]
    assert titles == [doc["traces"][lk]["title"] + " (expected)", doc["traces"][tso]["title"] + " (expected)"]
    for _ in range(3):
        ActionChains(browser).key_down(Keys.SHIFT).send_keys(Keys.ARROW_RIGHT).key_up(Keys.SHIFT).perform()
    assert browser.find_element(By.CSS_SELECTOR, "#right .at").text.startswith("step 3 of")
    assert browser.find_element(By.CSS_SELECTOR, "#left .at").text.startswith(f"step {cx.trace.steps} of")
    heads = [h.text for h in browser.find_elements(By.CSS_SELECTOR, "#right .state h3")]
    assert "Store buffers" in heads
    shot(browser, "sb-lkmm-and-tso-side-by-side")


def test_the_variant_table_opens_traces(browser, tmp_path):
    result = sb_result(tmp_path / "model")
    By = open_page(browser, result, tmp_path / "html")
    doc = page_data(result)
    rows = browser.find_elements(By.CSS_SELECTOR, "#table tr")[1:]
    assert [r.find_elements(By.TAG_NAME, "td")[0].text for r in rows] == [r["variant"] for r in doc["table"]]
    last = max(i for i, r in enumerate(doc["table"]) if r["trace"] is not None)
    rows[last].find_element(By.CSS_SELECTOR, "button.show-right").click()
    title = browser.find_element(By.CSS_SELECTOR, "#right h3.trace-title").text
    assert title.startswith(doc["traces"][doc["table"][last]["trace"]]["title"])
