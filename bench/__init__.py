"""AgentBar benchmarks (DESIGN.md §13, §15): start-up, save cost, stored size and capacity.

Run ``python -m bench`` (full, a few minutes) or ``python -m bench --quick``
(fewer repetitions, for CI: it checks the benchmark still works, asserts no
timings; once its start-up part is done it makes the later parts' data and ``dist/`` in a worker
process beside the browser: ``Run.prepare`` in ``bench/__main__.py``). Every figure is measured
against a baseline in the same run:

- start-up: the app page against a bare ``loadPyodide()`` + pydantic floor page
  and a PyScript + pydantic floor page (``bench/pages/``), same server, same
  Chromium, pages interleaved;
- save cost: the app's own save (turn completion → value in ``localStorage``,
  i.e. the bridge's ``splice`` or ``set``) against ``JSON.stringify`` +
  ``setItem`` of the identical envelope in the same page, on two paths: *steady*
  (this tab wrote the value last, the normal case: the live thread is trimmed
  back to its seeded length in memory before each turn, so the store splices in
  only this course's entry; the save goals apply here) and *cross-tab* (another
  tab wrote since: the value is re-seeded and re-read, only the changed
  entries, and the save splices again; reported for information);
- stored size: a heavy ``/regenerate`` turn as stored against its live JSON
  size, and the measured ``localStorage`` quota in threads.

Results: a printed table and ``bench-results/bench.json``.
"""
