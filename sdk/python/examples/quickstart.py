#!/usr/bin/env python3
"""Quick start: find a tool for a task in plain words, connect its app (once), and run it.

    export COMPANION_API_KEY=cpk_...            # your key
    export COMPANION_BASE_URL=https://...       # optional: another platform (e.g. api --local)
    python examples/quickstart.py "send a message to a slack channel" '{"body":{"channel":"#general","text":"Hello"}}'
"""

import json
import sys
import time
from pathlib import Path

# Run from the repository without installing; with `pip install companion-sdk` this is not needed.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from companion import Client, CompanionError  # noqa: E402

task = sys.argv[1] if len(sys.argv) > 1 else "send a message to a slack channel"
args = json.loads(sys.argv[2] if len(sys.argv) > 2 else '{"body": {"channel": "#general", "text": "Hello from the companion SDK"}}')
client = Client()

# 1. Find a tool for the task.
found = client.find_tools(task, limit=3)
if not found["tools"]:
    sys.exit(f'no tool for "{task}": {found["hint"]}')
for t in found["tools"]:
    print(f"found: {t['name']} ({t['app']}, score {t['score']:.2f}): {t['description']}")
tool = client.get_tool(found["tools"][0]["name"])
print(f"input schema of {tool['name']}: {json.dumps(tool['input_schema'])}")


# 2. Connect its app once: the user opens the link and approves; we wait for the connection.
def active_connection(app: str):
    return next((c for c in client.iter_connections(app=app) if c["status"] == "active"), None)


if not active_connection(tool["app"]):
    link = client.connect(tool["app"])
    print(f"connect: {link['url']}", flush=True)
    print(f"open the link above to connect {tool['app']} (it works once, until {link['expires_at']}); waiting...", flush=True)
    deadline = time.monotonic() + 600
    while not active_connection(tool["app"]):
        if time.monotonic() > deadline:
            sys.exit("not connected within 10 minutes")
        time.sleep(2)
    print(f"connected {tool['app']}")

# 3. Run it.
try:
    run = client.run_tool(tool["name"], args)
except CompanionError as e:
    print(f"failed: {e.status} {e.code}: {e.detail}" + (f" (connect: {e.connect_url})" if e.connect_url else ""), file=sys.stderr)
    for fe in e.errors:
        print(f"  {fe['pointer']}: {fe['detail']}", file=sys.stderr)
    sys.exit(1)
print(f"result: {run['status']} (HTTP {run['http_status']}, {run['duration_ms']} ms, {run['run_id']})")
print(json.dumps(run["data"], indent=2))
