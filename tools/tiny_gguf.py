"""Write a tiny llama-architecture GGUF whose replies are known in advance (for ``llama-server`` tests).

Run by ``tools/llama_server.py`` inside a virtual environment holding the
pinned PyPI ``gguf`` package (the writer llama.cpp itself uses) and numpy::

    python tools/tiny_gguf.py VARIANT OUT.gguf      # VARIANT: plain, tool or endless

The network is a real llama (2 blocks, 4 heads, ``n_embd`` 64) with random
weights, except that it behaves as a lookup table from the current token to
the next one: each token's embedding is one-hot on a *slot* (every token
without a rule of its own shares the ``default`` slot), the attention and
feed-forward outputs are scaled down to noise, and the output weights give
each slot's successor a logit about 30 above every other token. So whatever
the prompt, greedy or sampled decoding yields the same text:

- ``plain``: ``PLAIN_REPLY`` then ``<|im_end|>``;
- ``tool`` (biased to emit ``<tool_call>``): ``TOOL_CALL_TEXT`` (a Hermes-style
  ``regenerate_scene`` call) then ``<|im_end|>``; after a tool result the chat
  template ends the prompt with the control token ``<|after_tool|>``, whose
  successor is ``ANSWER_REPLY``, so the turn finishes with text;
- ``endless``: ``On and on and on …`` until the server's length limit or a stop.

The vocabulary is sentencepiece-style (``tokenizer.ggml.model`` ``llama``):
control tokens, the 256 byte-fallback tokens, printable ASCII as single
characters, and the reply pieces as user-defined tokens (matched whole). The
chat template is chatml with a tools section asking for ``<tool_call>``
blocks, so llama.cpp's template analysis finds a tool-call format.
"""

from __future__ import annotations

import sys
from pathlib import Path

# numpy and gguf are imported by ``write`` only: the recipe below is plain Python (unit-tested in CPython).

PLAIN_REPLY = ["Hello", " from", " the", " tiny", " llama", "."]
ANSWER_REPLY = ["Scene", " regenerated", " as", " asked", "."]
ENDLESS_START, ENDLESS_LOOP = "On", [" and", " on"]
TOOL_CALL_PIECES = ["<tool_call>",
                    '\n{"name": "regenerate_scene", "arguments": ',
                    '{"sceneId": "scene-2", "instruction": "llama chart"}}',
                    "\n</tool_call>"]
TOOL_CALL_TEXT = "".join(TOOL_CALL_PIECES)
PLAIN_TEXT, ANSWER_TEXT = "".join(PLAIN_REPLY), "".join(ANSWER_REPLY)
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, BYTE = 1, 2, 3, 4, 6
"""Token types as GGUF numbers them (``gguf.TokenType``; ``write`` checks they still agree)."""
CONTROL_TOKENS = ["<unk>", "<s>", "</s>", "<|im_start|>", "<|im_end|>", "<|after_tool|>"]

CHAT_TEMPLATE = """\
{%- if messages and messages[0].role == 'system' %}{% set system = messages[0].content %}{% else %}{% set system = '' %}{% endif %}
{%- if tools %}<|im_start|>system
{{ system }}

You may call these tools (JSON signatures inside <tools></tools>):
<tools>
{%- for tool in tools %}
{{ tool | tojson }}
{%- endfor %}
</tools>
For each call, answer a JSON object with its name and arguments inside <tool_call></tool_call> tags:
<tool_call>
{"name": <function-name>, "arguments": <args-json-object>}
</tool_call><|im_end|>
{% elif system %}<|im_start|>system
{{ system }}<|im_end|>
{% endif %}
{%- for message in messages %}
{%- if message.role == 'user' or (message.role == 'assistant' and not message.tool_calls) %}<|im_start|>{{ message.role }}
{{ message.content }}<|im_end|>
{% elif message.role == 'assistant' %}<|im_start|>assistant
{%- if message.content %}
{{ message.content }}
{%- endif %}
{%- for call in message.tool_calls %}
{%- if call.function is defined %}{% set call = call.function %}{% endif %}
<tool_call>
{"name": "{{ call.name }}", "arguments": {% if call.arguments is string %}{{ call.arguments }}{% else %}{{ call.arguments | tojson }}{% endif %}}
</tool_call>
{%- endfor %}<|im_end|>
{% elif message.role == 'tool' %}
{%- if loop.first or messages[loop.index0 - 1].role != 'tool' %}<|im_start|>user{% endif %}
<tool_response>
{{ message.content }}
</tool_response>
{%- if loop.last or messages[loop.index0 + 1].role != 'tool' %}<|im_end|>
{% endif %}
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}<|im_start|>assistant
{% if messages and messages[-1].role == 'tool' %}<|after_tool|>{% endif %}
{%- endif %}
"""

N_EMBD, N_LAYER, N_HEAD, N_FF, N_CTX = 64, 2, 4, 128, 8192
MARGIN = 4.0
"""Weight of a slot's successor in the output matrix: its logit is MARGIN · sqrt(N_EMBD) = 32 above noise."""


def vocabulary() -> tuple[list[str], list[float], list[int]]:
    """``(tokens, scores, types)``: control tokens, byte fallback, ASCII characters, reply pieces."""
    tokens, scores, types = [], [], []

    def add(text: str, kind: int, score: float = 0.0) -> None:
        if text not in tokens:
            tokens.append(text)
            scores.append(score)
            types.append(kind)

    for text in CONTROL_TOKENS:
        add(text, UNKNOWN if text == "<unk>" else CONTROL)
    for byte in range(256):
        add(f"<0x{byte:02X}>", BYTE)
    for code in range(0x21, 0x7F):
        add(chr(code), NORMAL, -1.0)
    add("\u2581", NORMAL, -1.0)  # the sentencepiece space
    for piece in [*PLAIN_REPLY, *ANSWER_REPLY, ENDLESS_START, *ENDLESS_LOOP, *TOOL_CALL_PIECES]:
        add(piece, USER_DEFINED)
    return tokens, scores, types


def successors(variant: str) -> tuple[str, dict[str, str]]:
    """``(default successor, {token: successor})`` of a variant (see the module docstring)."""
    def chain(pieces: list[str], end: str = "<|im_end|>") -> dict[str, str]:
        return dict(zip(pieces, [*pieces[1:], end]))

    rules = {"<|after_tool|>": ANSWER_REPLY[0], **chain(ANSWER_REPLY)}
    if variant == "plain":
        return PLAIN_REPLY[0], {**rules, **chain(PLAIN_REPLY)}
    if variant == "tool":
        return TOOL_CALL_PIECES[0], {**rules, **chain(TOOL_CALL_PIECES)}
    if variant == "endless":
        loop = {ENDLESS_START: ENDLESS_LOOP[0], ENDLESS_LOOP[0]: ENDLESS_LOOP[1], ENDLESS_LOOP[1]: ENDLESS_LOOP[0]}
        return ENDLESS_START, {**rules, **loop}
    raise SystemExit(f"tiny_gguf: unknown variant {variant!r} (plain, tool, endless)")


def write(variant: str, out: Path, seed: int = 20261201) -> None:
    """Write the ``variant`` model to ``out`` (GGUF v3, f32 tensors); raises ``SystemExit`` on a bad variant."""
    import numpy as np
    from gguf import GGUFWriter, TokenType

    kinds = (TokenType.NORMAL, TokenType.UNKNOWN, TokenType.CONTROL, TokenType.USER_DEFINED, TokenType.BYTE)
    if [int(kind) for kind in kinds] != [NORMAL, UNKNOWN, CONTROL, USER_DEFINED, BYTE]:
        raise SystemExit("tiny_gguf: this gguf numbers token types differently")
    tokens, scores, types = vocabulary()
    index = {text: i for i, text in enumerate(tokens)}
    default, rules = successors(variant)
    if len(rules) + 1 > N_EMBD:
        raise SystemExit("tiny_gguf: more rules than embedding slots")
    slot = {token: n + 1 for n, token in enumerate(rules)}  # slot 0: every other token
    rng = np.random.default_rng(seed)
    n_vocab = len(tokens)
    scale = np.float32(np.sqrt(N_EMBD))

    embed = rng.normal(0, 0.01, (n_vocab, N_EMBD)).astype(np.float32)
    for i, text in enumerate(tokens):
        embed[i, slot.get(text, 0)] += scale  # one-hot: RMS norm leaves it as it is
    output = rng.normal(0, 0.02, (n_vocab, N_EMBD)).astype(np.float32)
    output[index[default], 0] += MARGIN
    for token, after in rules.items():
        output[index[after], slot[token]] += MARGIN

    writer = GGUFWriter(str(out), "llama")
    writer.add_name(f"agentbar-tiny-{variant}")
    writer.add_context_length(N_CTX)
    writer.add_embedding_length(N_EMBD)
    writer.add_block_count(N_LAYER)
    writer.add_feed_forward_length(N_FF)
    writer.add_head_count(N_HEAD)
    writer.add_head_count_kv(N_HEAD)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_dimension_count(N_EMBD // N_HEAD)
    writer.add_vocab_size(n_vocab)
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_unk_token_id(index["<unk>"])
    writer.add_bos_token_id(index["<s>"])
    writer.add_eos_token_id(index["<|im_end|>"])
    writer.add_add_bos_token(False)
    writer.add_add_space_prefix(False)
    writer.add_chat_template(CHAT_TEMPLATE)

    def noise(*shape: int, std: float = 0.02):
        return rng.normal(0, std, shape).astype(np.float32)

    writer.add_tensor("token_embd.weight", embed)
    writer.add_tensor("output_norm.weight", np.ones(N_EMBD, np.float32))
    writer.add_tensor("output.weight", output)
    for layer in range(N_LAYER):
        name = f"blk.{layer}"
        writer.add_tensor(f"{name}.attn_norm.weight", np.ones(N_EMBD, np.float32))
        for part in ("q", "k", "v"):
            writer.add_tensor(f"{name}.attn_{part}.weight", noise(N_EMBD, N_EMBD))
        writer.add_tensor(f"{name}.attn_output.weight", noise(N_EMBD, N_EMBD, std=1e-4))
        writer.add_tensor(f"{name}.ffn_norm.weight", np.ones(N_EMBD, np.float32))
        writer.add_tensor(f"{name}.ffn_gate.weight", noise(N_FF, N_EMBD))
        writer.add_tensor(f"{name}.ffn_up.weight", noise(N_FF, N_EMBD))
        writer.add_tensor(f"{name}.ffn_down.weight", noise(N_EMBD, N_FF, std=1e-4))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit("usage: python tools/tiny_gguf.py plain|tool|endless OUT.gguf")
    write(sys.argv[1], Path(sys.argv[2]))
