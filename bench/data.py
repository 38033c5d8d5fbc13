"""Synthetic stored data built from the app's own models and projection.

Threads look like what the demo agent produces: a user line in mixed text
(Chinese, English, curly quotes, emoji), the agent's ``reply_text`` answer, and
every ``REGENERATE_EVERY``-th turn a ``/regenerate`` call whose heavy live
result goes through ``app.projection.serialize_thread`` like a real save.

Example::

    >>> msgs = thread_messages("c0", 4)
    >>> [m["role"] for m in msgs]
    ['user', 'assistant', 'user', 'assistant']
"""

from __future__ import annotations

import functools
import json

from app.agent import REGENERATE_TOOL, regenerate_result, reply_text
from app.i18n import use_number_rules
from app.model import COMPLETE, Message, TextPart, ToolCallPart
from app.projection import serialize_thread
from tools.cldr_numbers import cldr_numbers

use_number_rules(cldr_numbers)  # the demo reply writes its numbers as the page's Intl does (CLDR data)

STORAGE_KEY = "maic-agent-threads"
REGENERATE_EVERY = 10
BASE_TIME = 1_780_000_000_000

MIXED_LINES = (
    "请解释一下“过拟合”是什么意思？Overfitting 🤖 means the model memorises noise.",
    "老师说 gradient descent 要“小步快跑”，学习率 learning rate 设多少合适？📈",
    "能不能用一个生活中的例子讲讲‘正则化’（regularization）？谢谢 🙏",
    "我把第二页的标题改成“监督学习 Supervised Learning”，字体会不会太大？",
    "为什么 validation loss 先降后升？是不是该 early stopping 了 🤔",
    "帮我总结这一节：矩阵乘法、转置和“单位矩阵” identity matrix ✅",
    "这个公式 y = Wx + b 里的 b 叫什么？bias 还是“截距”？",
    "Can you make scene 3 更简洁一点？把例子换成“房价预测” 🏠",
    "「特征工程」和 feature selection 有什么区别？举个例子吧 💡",
    "第 4 页的动画太快了，能慢一点吗？Slow it down — 大概 2 秒 ⏱️",
)


def mixed_line(i: int) -> str:
    """A user line of realistic mixed text, varied by ``i``."""
    return f"{MIXED_LINES[i % len(MIXED_LINES)]} （第 {i + 1} 问）"


@functools.lru_cache(maxsize=None)
def _regenerate(scene_id: str, instruction: str) -> dict:
    return regenerate_result(scene_id, instruction)


def turn_messages(stage_id: str, turn: int) -> list[Message]:
    """One user turn and its completed assistant answer, as live models."""
    mid = f"{stage_id}-{turn}"
    if turn % REGENERATE_EVERY == REGENERATE_EVERY - 1:
        scene = f"scene-{turn % 3 + 1}"
        instruction = "把标题改成“过拟合 Overfitting”🤖"
        user = Message(id=f"u-{mid}", role="user", content=[TextPart(text=f"/regenerate {scene} {instruction}")])
        reply = Message(
            id=f"a-{mid}",
            role="assistant",
            status=COMPLETE,
            content=[
                ToolCallPart(
                    tool_call_id=f"call-{mid}",
                    tool_name=REGENERATE_TOOL,
                    args={"sceneId": scene, "instruction": instruction},
                    result=_regenerate(scene, instruction),
                ),
                TextPart(text=f"Done: scene {scene} 已更新 ✅"),
            ],
        )
        return [user, reply]
    text = mixed_line(turn)
    return [
        Message(id=f"u-{mid}", role="user", content=[TextPart(text=text)]),
        Message(id=f"a-{mid}", role="assistant", status=COMPLETE, content=[TextPart(text=reply_text(text))]),
    ]


def live_thread(stage_id: str, n_messages: int) -> list[Message]:
    """``n_messages`` live messages (rounded down to whole turns)."""
    out: list[Message] = []
    for turn in range(n_messages // 2):
        out += turn_messages(stage_id, turn)
    return out


def thread_messages(stage_id: str, n_messages: int) -> list[dict]:
    """The slim stored form of ``live_thread(stage_id, n_messages)``."""
    return serialize_thread(live_thread(stage_id, n_messages))


@functools.lru_cache(maxsize=64)
def _slim_json(n_messages: int) -> str:
    # Threads of one size share their shape; only ids differ (patched in below).
    return json.dumps(thread_messages("@@STAGE@@", n_messages), ensure_ascii=False, separators=(",", ":"))


def thread_json(stage_id: str, n_messages: int) -> str:
    """Compact JSON of a stored thread's ``messages`` list (as ``JSON.stringify`` writes it)."""
    return _slim_json(n_messages).replace("@@STAGE@@", stage_id)


def envelope(threads: dict[str, int], base_time: int = BASE_TIME) -> str:
    """The stored value holding ``{stageId: n_messages}`` threads, exactly as JS would write it."""
    body = ",".join(
        f"{json.dumps(stage, ensure_ascii=False)}:{{\"messages\":{thread_json(stage, n)},\"updatedAt\":{base_time + i}}}"
        for i, (stage, n) in enumerate(threads.items())
    )
    return f'{{"state":{{"threads":{{{body}}}}},"version":1}}'


def others(count: int, n_messages: int = 100) -> dict[str, int]:
    """``count`` other courses of ``n_messages`` each."""
    return {f"course-{i:03d}": n_messages for i in range(count)}


def utf16_len(s: str) -> int:
    return len(s.encode("utf-16-le", "surrogatepass")) // 2


def compact(obj) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def cards_thread(stage_id: str, cards: int = 50, turns: int = 20) -> list[dict]:
    """The slim stored form of ``turns`` turns whose replies hold ``cards`` regenerate tool cards
    between them (spread evenly, each reply ending in a line of text): a thread whose rendered
    window (``RENDER_WINDOW`` messages) shows every card."""
    out: list[Message] = []
    for turn in range(turns):
        mid = f"{stage_id}-{turn}"
        count = cards // turns + (1 if turn < cards % turns else 0)
        parts: list = []
        for n in range(count):
            scene = f"scene-{(turn + n) % 3 + 1}"
            instruction = f"第 {turn + 1} 轮 · 把标题改成“过拟合 Overfitting” {n + 1}"
            parts.append(ToolCallPart(tool_call_id=f"call-{mid}-{n}", tool_name=REGENERATE_TOOL,
                                      args={"sceneId": scene, "instruction": instruction},
                                      result=_regenerate(scene, instruction)))
        parts.append(TextPart(text=f"Done: {count} scenes 已更新 ✅"))
        out += [Message(id=f"u-{mid}", role="user", content=[TextPart(text=mixed_line(turn))]),
                Message(id=f"a-{mid}", role="assistant", status=COMPLETE, content=parts)]
    return serialize_thread(out)
