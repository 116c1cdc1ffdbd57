"""A stdio MCP upstream (2025-11-25 handshake) that misbehaves on request, for the proxy's
tests. Its tools:

  ok        answers {"ok": true}
  env       answers its whole environment as a JSON object (text content)
  garbage   answers a line that is not JSON, then behaves
  huge      answers a valid JSON line of `bytes` bytes (an argument), then behaves

Standard library only; one JSON-RPC message per line on stdin and stdout.
"""

import json
import os
import sys


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def result(id_, value):
    send({"jsonrpc": "2.0", "id": id_, "result": value})


def text(value):
    return {"content": [{"type": "text", "text": value}], "isError": False}


TOOLS = [
    {"name": name, "inputSchema": {"type": "object"}}
    for name in ("ok", "env", "garbage", "huge")
]

for line in sys.stdin:
    line = line.strip()
    if not line:
        continue
    message = json.loads(line)
    method = message.get("method")
    id_ = message.get("id")
    if id_ is None:
        continue  # notifications
    if method == "initialize":
        result(id_, {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "fake-upstream", "version": "1"},
        })
    elif method == "tools/list":
        result(id_, {"tools": TOOLS})
    elif method == "tools/call":
        params = message.get("params") or {}
        name = params.get("name")
        args = params.get("arguments") or {}
        if name == "ok":
            result(id_, text(json.dumps({"ok": True})))
        elif name == "env":
            result(id_, text(json.dumps(dict(os.environ))))
        elif name == "garbage":
            sys.stdout.write("this line is not JSON\n")
            sys.stdout.flush()
        elif name == "huge":
            size = int(args.get("bytes", 1 << 20))
            sys.stdout.write('"' + "x" * (size - 2) + '"\n')
            sys.stdout.flush()
        else:
            send({"jsonrpc": "2.0", "id": id_,
                  "error": {"code": -32602, "message": "unknown tool " + str(name)}})
    elif method == "ping":
        result(id_, {})
    else:
        send({"jsonrpc": "2.0", "id": id_,
              "error": {"code": -32601, "message": "method not found: " + str(method)}})
