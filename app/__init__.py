"""AgentBar: a per-course agent chat panel whose conversation survives a refresh.

Pure modules (model, projection, store, agent, runtime, i18n, courses) run under
CPython; only ``app.browser`` touches ``pyscript``/``js``/``pyodide``.
See ../shared/DESIGN.md §8.
"""
