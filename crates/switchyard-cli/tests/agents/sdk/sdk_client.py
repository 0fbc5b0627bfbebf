"""A two-turn tool conversation through `switchyard serve` with an official Python SDK.

    python sdk_client.py --api chat|responses|messages --stream|--no-stream \
        --base-url URL --model ID --workdir DIR [--prompt TEXT] [--no-tools] [--max-tokens N] \
        [--extra JSON]
    python sdk_client.py --api models --base-url ORIGIN

Turn 1 offers one tool, ``write_file {path, content}``, and asks for hello.txt; when the model
calls the tool, the script writes the file (inside --workdir only) and sends the result back the
SDK's own way (Chat: a ``role: "tool"`` message after the assistant's ``tool_calls``; Responses:
the ``function_call`` item and a ``function_call_output``; Anthropic: the ``tool_use`` block and
a ``tool_result`` block), and turn 2 is the model's text. With --no-tools there is one turn with
no tool offered (the local-model test). With --api models it reads ``GET /v1/models`` with
both SDKs and prints ``{"openai": [ids], "anthropic": [ids]}``.

Streamed turns go through the SDK's own accumulating helpers
(``client.chat.completions.stream(...).get_final_completion()``,
``client.responses.stream(...).get_final_response()``,
``client.messages.stream(...).get_final_message()``), so a pass means the SDK's state machine
accepted every event; ``deltas`` counts the pieces the SDK yielded.

Prints one JSON object: ``{"sdk", "version", "turns": [{"text", "tool_calls": [{"id", "name",
"arguments"}], "stop", "usage": {…}, "deltas", "events"}], "wrote": {path: content}}``, with
``events`` the sorted event types the SDK's stream helper yielded (none when not streamed) and
the usage in the dialect's own names (Chat ``prompt_tokens``/``completion_tokens``/``cached_tokens``/
``reasoning_tokens``; Responses ``input_tokens``/``output_tokens``/``cached_tokens``/
``reasoning_tokens``; Anthropic ``input_tokens``/``output_tokens``/
``cache_read_input_tokens``/``cache_creation_input_tokens``). The key comes from
OPENAI_API_KEY or ANTHROPIC_API_KEY; it is never printed.
"""

import argparse
import json
import os
import sys

PROMPT = "Create the file hello.txt containing hi. Use the write_file tool."
TOOL_DESCRIPTION = "Write a text file in the working directory."
TOOL_SCHEMA = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "File path, relative"},
        "content": {"type": "string", "description": "The whole file"},
    },
    "required": ["path", "content"],
}


def write_file(workdir, arguments, wrote):
    """Performs a write_file call inside workdir; returns the tool result text."""
    path = os.path.normpath(os.path.join(workdir, arguments["path"]))
    if not path.startswith(os.path.abspath(workdir) + os.sep):
        return "refused: outside the working directory"
    with open(path, "w", encoding="utf-8") as f:
        f.write(arguments["content"])
    wrote[arguments["path"]] = arguments["content"]
    return f"wrote {len(arguments['content'])} bytes to {arguments['path']}"


def chat_turn(client, a, messages, tools):
    kwargs = dict(model=a.model, messages=messages, max_tokens=a.max_tokens, **a.extra)
    if tools:
        kwargs["tools"] = [{"type": "function", "function": {
            "name": "write_file", "description": TOOL_DESCRIPTION, "parameters": TOOL_SCHEMA}}]
    deltas, events = 0, set()
    if a.stream:
        from openai import LengthFinishReasonError
        with client.chat.completions.stream(
                stream_options={"include_usage": True}, **kwargs) as stream:
            for event in stream:
                events.add(event.type)
                if event.type in ("content.delta", "tool_calls.function.arguments.delta"):
                    deltas += 1
            try:
                completion = stream.get_final_completion()
            except LengthFinishReasonError as cut:
                # The helper refuses to parse an answer the output limit cut (finish_reason
                # "length"), as it does against OpenAI; the completion it carries is what came.
                completion = cut.completion
    else:
        completion = client.chat.completions.create(**kwargs)
    choice = completion.choices[0]
    message = choice.message
    calls = [{"id": c.id, "name": c.function.name, "arguments": json.loads(c.function.arguments)}
             for c in (message.tool_calls or [])]
    u = completion.usage
    usage = None if u is None else {
        "prompt_tokens": u.prompt_tokens,
        "completion_tokens": u.completion_tokens,
        "cached_tokens": getattr(u.prompt_tokens_details, "cached_tokens", None),
        "reasoning_tokens": getattr(u.completion_tokens_details, "reasoning_tokens", None),
    }
    turn = {"text": message.content or "", "tool_calls": calls, "stop": choice.finish_reason,
            "usage": usage, "deltas": deltas, "events": sorted(events)}
    # The SDK's own way: the returned message object goes back as it is.
    assistant = message
    return turn, [assistant], lambda call, result: {
        "role": "tool", "tool_call_id": call["id"], "content": result}


def responses_turn(client, a, items, tools):
    kwargs = dict(model=a.model, input=items, max_output_tokens=a.max_tokens, store=False,
                  **a.extra)
    if tools:
        kwargs["tools"] = [{"type": "function", "name": "write_file",
                            "description": TOOL_DESCRIPTION, "parameters": TOOL_SCHEMA,
                            "strict": False}]
    deltas, events = 0, set()
    if a.stream:
        with client.responses.stream(**kwargs) as stream:
            for event in stream:
                events.add(event.type)
                if event.type in ("response.output_text.delta",
                                  "response.function_call_arguments.delta"):
                    deltas += 1
            response = stream.get_final_response()
    else:
        response = client.responses.create(**kwargs)
    calls = [{"id": item.call_id, "name": item.name, "arguments": json.loads(item.arguments)}
             for item in response.output if item.type == "function_call"]
    # The SDK's own way: the output items go back as they are (store is false).
    echoed = list(response.output)
    u = response.usage
    usage = None if u is None else {
        "input_tokens": u.input_tokens,
        "output_tokens": u.output_tokens,
        "cached_tokens": u.input_tokens_details.cached_tokens,
        "reasoning_tokens": u.output_tokens_details.reasoning_tokens,
    }
    turn = {"text": response.output_text, "tool_calls": calls, "stop": response.status,
            "usage": usage, "deltas": deltas, "events": sorted(events)}
    return turn, echoed, lambda call, result: {
        "type": "function_call_output", "call_id": call["id"], "output": result}


def messages_turn(client, a, messages, tools):
    kwargs = dict(model=a.model, messages=messages, max_tokens=a.max_tokens, **a.extra)
    if tools:
        kwargs["tools"] = [{"name": "write_file", "description": TOOL_DESCRIPTION,
                            "input_schema": TOOL_SCHEMA}]
    deltas, events = 0, set()
    if a.stream:
        with client.messages.stream(**kwargs) as stream:
            for event in stream:
                events.add(event.type)
                if event.type == "content_block_delta":
                    deltas += 1
            message = stream.get_final_message()
    else:
        message = client.messages.create(**kwargs)
    text = "".join(b.text for b in message.content if b.type == "text")
    calls = [{"id": b.id, "name": b.name, "arguments": b.input}
             for b in message.content if b.type == "tool_use"]
    u = message.usage
    usage = {
        "input_tokens": u.input_tokens,
        "output_tokens": u.output_tokens,
        "cache_read_input_tokens": u.cache_read_input_tokens,
        "cache_creation_input_tokens": u.cache_creation_input_tokens,
    }
    turn = {"text": text, "tool_calls": calls, "stop": message.stop_reason, "usage": usage,
            "deltas": deltas, "events": sorted(events)}
    # The SDK's own way: the returned content blocks go back as they are.
    assistant = {"role": "assistant", "content": message.content}
    results = []

    def tool_result(call, result):
        # Every result of one assistant turn goes into one user message.
        results.append({"type": "tool_result", "tool_use_id": call["id"], "content": result})
        return None

    turn["_results"] = results
    return turn, [assistant], tool_result


def list_models(origin):
    """``GET /v1/models`` with both SDKs (the Anthropic one sends ``anthropic-version``, so
    the gateway answers in Anthropic's list shape): the ids each SDK read, every page."""
    import anthropic
    import openai
    o = openai.OpenAI(api_key=os.environ["OPENAI_API_KEY"], base_url=origin + "/v1",
                      max_retries=0, timeout=60)
    c = anthropic.Anthropic(api_key=os.environ["ANTHROPIC_API_KEY"], base_url=origin,
                            max_retries=0, timeout=60)
    print(json.dumps({"openai": [m.id for m in o.models.list()],
                      "anthropic": [m.id for m in c.models.list()]}))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--api", choices=["chat", "responses", "messages", "models"], required=True)
    p.add_argument("--stream", action=argparse.BooleanOptionalAction, default=False)
    p.add_argument("--base-url", required=True)
    p.add_argument("--model")
    p.add_argument("--workdir")
    p.add_argument("--prompt", default=PROMPT)
    p.add_argument("--no-tools", action="store_true")
    p.add_argument("--max-tokens", type=int, default=256)
    p.add_argument("--extra", type=json.loads, default={},
                   help="more request parameters, a JSON object (top_p, stop, tool_choice…)")
    a = p.parse_args()
    tools = not a.no_tools
    if a.api == "models":
        list_models(a.base_url)
        return

    if a.api == "messages":
        import anthropic
        sdk, version = "anthropic", anthropic.__version__
        client = anthropic.Anthropic(api_key=os.environ["ANTHROPIC_API_KEY"],
                                     base_url=a.base_url, max_retries=0, timeout=60)
        turn_fn = messages_turn
    else:
        import openai
        sdk, version = "openai", openai.__version__
        client = openai.OpenAI(api_key=os.environ["OPENAI_API_KEY"], base_url=a.base_url,
                               max_retries=0, timeout=60)
        turn_fn = chat_turn if a.api == "chat" else responses_turn

    history = [{"role": "user", "content": a.prompt}]
    turns, wrote = [], {}
    for _ in range(2 if tools else 1):
        turn, echoed, result_of = turn_fn(client, a, history, tools)
        results = turn.pop("_results", None)
        turns.append(turn)
        if not turn["tool_calls"]:
            break
        history += echoed
        for call in turn["tool_calls"]:
            item = result_of(call, write_file(a.workdir, call["arguments"], wrote))
            if item is not None:
                history.append(item)
        if results is not None:
            history.append({"role": "user", "content": results})
    print(json.dumps({"sdk": sdk, "version": version, "api": a.api, "stream": a.stream,
                      "turns": turns, "wrote": wrote}, sort_keys=True))


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # the test prints this; the SDK's own error type and message
        print(f"{type(e).__module__}.{type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)
