"""Agents beyond the built-in demo: the OpenAI-compatible back end (DESIGN.md §12).

Pure Python (no browser imports), tested in CPython with a fake transport:

- ``sse``: server-sent event parser;
- ``protocol``: the thread → Chat Completions ``messages``;
- ``tools``: the ``regenerate_scene`` tool schema and its local runner;
- ``openai``: ``OpenAIAgent``, ``list_models``, ``check_connection``, the ``Transport`` interface;
- ``context``: a prompt over the server's context, and how many turns to send again;
- ``errors``: ``ModelError`` codes the view localizes (``model.error.<code>``);
- ``events``: ``UsageReported`` / ``TokenUsage`` (per-turn usage and model);
- ``settings``: ``ModelSettings`` and the storage rules of the API key;
- ``switch``: ``SelectedAgent``, which runs each turn on the agent the settings pick.
"""
