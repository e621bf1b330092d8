"""An agent as an HTTP service: the OpenAI chat-completions format over a rule-based reply.

Run it and point an arena agent at it (``endpoint = "http://127.0.0.1:8100/v1"``)::

    uvicorn app:app --app-dir examples/agent_service --port 8100

Any service that answers ``POST /v1/chat/completions`` this way can be put in the arena: it gets
the task's system prompt, then the conversation (the user's turns as ``user``, its own as
``assistant``), and its reply is the agent's next turn.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from fastapi import FastAPI
from pydantic import BaseModel, Field
from rule_agent import VERSION, rule_reply

app = FastAPI(title="cogwm example agent service")


class ChatMessage(BaseModel):
    """One message of the chat."""

    role: str
    content: str | None = ""


class ChatRequest(BaseModel):
    """The fields of a chat-completions request this service reads (others are accepted)."""

    model: str = "rules"
    messages: list[ChatMessage] = Field(min_length=1)
    max_tokens: int | None = None


@app.get("/v1/models")
def models() -> dict[str, Any]:
    """The one model this service serves, with its version."""
    return {
        "object": "list",
        "data": [{"id": "rules", "object": "model", "owned_by": "example", "version": VERSION}],
    }


@app.post("/v1/chat/completions")
def chat(request: ChatRequest) -> dict[str, Any]:
    """The next agent turn for the conversation in ``request.messages``."""
    users = [m.content or "" for m in request.messages if m.role == "user"]
    mine = sum(1 for m in request.messages if m.role == "assistant")
    text = rule_reply(users[-1] if users else "", mine)
    if request.max_tokens is not None:
        # Words stand in for tokens here: the reply stays inside the budget it was given.
        text = " ".join(text.split()[: request.max_tokens])
    prompt_words = sum(len((m.content or "").split()) for m in request.messages)
    reply_words = len(text.split())
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.model,
        "system_fingerprint": VERSION,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_words,
            "completion_tokens": reply_words,
            "total_tokens": prompt_words + reply_words,
        },
    }
