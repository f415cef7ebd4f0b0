"""The integration operations end to end against the real platform: connect an app through the
hosted OAuth flow (fake provider on loopback), list and revoke connections, run tools (a custom
REST connector's tool against a loopback API; connection_required and invalid arguments), custom
connectors, triggers with a real signed delivery, account events.
"""

from __future__ import annotations

import json
import time
import unittest
import urllib.error
import urllib.request

from fakes import OPENAPI, Fakes
from platform_harness import FIXTURE_CATALOG, Platform

from companion import Client, CompanionError, WebhookVerificationError, verify_webhook

platform: Platform
fakes: Fakes
key: str


def setUpModule() -> None:  # noqa: N802 (unittest's naming)
    global platform, fakes, key
    fakes = Fakes().start()
    oauth = fakes.oauth_apps_file(["slack", "github", "google_sheets", "gmail", "zoom", "stripe"])
    catalog = fakes.runnable_catalog_file(FIXTURE_CATALOG)
    platform = Platform()
    platform.start(env={"OAUTH_APPS": oauth, "CATALOG_PATH": catalog})
    key = platform.account("sdk-py-int")


def tearDownModule() -> None:  # noqa: N802
    platform.stop()
    fakes.stop()


def connect_app(client: Client, app: str) -> tuple[dict, str]:
    """Connects ``app`` through the hosted page as a person does: the link shows a consent page
    (a GET uses nothing up, so link previewers cannot burn it), its button POSTs → provider →
    callback → redirect_url."""
    link = client.connect(app, label="work", redirect_url=f"{fakes.url}/done")
    with urllib.request.urlopen(link["url"], timeout=30) as resp:
        assert resp.status == 200, resp.status
        assert b'<form method="post"' in resp.read()
    button = urllib.request.Request(link["url"], data=b"", method="POST")
    with urllib.request.urlopen(button, timeout=30) as resp:
        done = json.loads(resp.read())
    assert done.get("status") == "success", done
    assert done["connection_id"].startswith("conn_"), done
    return dict(link), done["connection_id"]


class IntegrationsTest(unittest.TestCase):
    def setUp(self) -> None:
        self.client = Client(api_key=key, base_url=platform.base_url)

    def test_get_tool_shows_what_a_run_does_and_an_example_the_platform_accepts(self) -> None:
        fresh = Client(api_key=platform.account("sdk-py-detail"), base_url=platform.base_url)
        tool = fresh.get_tool("slack_send_message")
        self.assertEqual(tool["name"], "slack_send_message")
        self.assertEqual((tool["method"], tool["path"]), ("POST", "/api/slack_send_message"))
        self.assertEqual(tool["server_url"], fakes.url)
        self.assertEqual(tool["auth"], [{"kind": "oauth2", "scopes": ["write"], "schemes": ["oauth"]}])
        example = tool["example_input"]
        assert example is not None
        self.assertEqual(sorted(example["body"]), ["channel", "text"])
        # Kinds and scopes only: the OAuth client's secret is nowhere in the detail.
        self.assertNotIn("secret_slack", json.dumps(tool))
        # The example passes the platform's own argument check: the run stops at the missing
        # connection, not at invalid arguments.
        with self.assertRaises(CompanionError) as ctx:
            fresh.run_tool(tool["name"], example)
        self.assertEqual(ctx.exception.code, "connection_required")
        listing = fresh.get_tool("slack_list_channels")
        self.assertEqual((listing["method"], listing["path"]), ("GET", "/api/slack_list_channels"))

    def test_connect_link_connection_listed_then_revoked(self) -> None:
        link, conn_id = connect_app(self.client, "slack")
        self.assertTrue(link["id"].startswith("cl_"))
        self.assertEqual((link["app"], link["auth"]), ("slack", "oauth2"))
        self.assertTrue(link["url"].startswith(f"{platform.base_url}/connect/cl_"), link["url"])
        # The link works once.
        with self.assertRaises(urllib.error.HTTPError) as ctx:
            urllib.request.urlopen(link["url"], timeout=30)
        self.assertTrue(400 <= ctx.exception.code < 500)
        ctx.exception.close()

        page = self.client.connections(app="slack")
        conn = next(c for c in page["connections"] if c["id"] == conn_id)
        self.assertEqual((conn["status"], conn["label"]), ("active", "work"))
        self.assertIn(conn_id, [c["id"] for c in self.client.iter_connections(limit=1)])
        self.assertEqual(self.client.apps(search="slack")["apps"][0]["connection_status"], "connected")

        self.client.delete_connection(conn_id)
        after = self.client.connections(app="slack")
        self.assertFalse(any(c["id"] == conn_id and c["status"] == "active" for c in after["connections"]))

    def test_connect_unknown_app_is_404(self) -> None:
        with self.assertRaises(CompanionError) as ctx:
            self.client.connect("no_such_app")
        self.assertEqual((ctx.exception.status, ctx.exception.code), (404, "app_not_found"))

    def test_run_without_connection_is_409_with_connect_url(self) -> None:
        fresh = Client(api_key=platform.account("noconn"), base_url=platform.base_url)
        with self.assertRaises(CompanionError) as ctx:
            fresh.run_tool("slack_send_message", {"body": {"channel": "#general", "text": "hi"}})
        err = ctx.exception
        self.assertEqual((err.status, err.code), (409, "connection_required"))
        self.assertRegex(err.connect_url or "", r"/connect/cl_")
        self.assertEqual(err.problem.get("app"), "slack")
        self.assertEqual(fresh.runs()["runs"][0]["status"], "connection_required")

    def test_run_tool_calls_the_api_with_the_connection_token_and_records_the_run(self) -> None:
        own = Client(api_key=platform.account("run"), base_url=platform.base_url)
        _, conn_id = connect_app(own, "slack")
        before = len(fakes.calls)
        run = own.run_tool("slack_send_message", {"body": {"channel": "#general", "text": "hi"}}, connection_id=conn_id)
        self.assertTrue(run["run_id"].startswith("run_"))
        self.assertEqual((run["status"], run["tool"], run["app"], run["http_status"]), ("succeeded", "slack_send_message", "slack", 200))
        self.assertEqual(run["connection_id"], conn_id)
        self.assertEqual(run["data"]["path"], "/api/slack_send_message")
        call = fakes.calls[before]
        self.assertEqual(call["method"], "POST")
        self.assertRegex(call["headers"].get("authorization", ""), r"^Bearer tok_\d+$")
        self.assertEqual(json.loads(call["body"]), {"channel": "#general", "text": "hi"})
        latest = own.runs()["runs"][0]
        self.assertEqual((latest["id"], latest["status"]), (run["run_id"], "succeeded"))

    def test_invalid_arguments_and_unknown_tool(self) -> None:
        with self.assertRaises(CompanionError) as ctx:
            self.client.run_tool("slack_send_message", {"body": {"channel": 5}})
        self.assertEqual((ctx.exception.status, ctx.exception.code), (422, "invalid_arguments"))
        self.assertTrue(ctx.exception.errors)
        with self.assertRaises(CompanionError) as ctx:
            self.client.run_tool("no_such_tool", {})
        self.assertEqual(ctx.exception.code, "tool_not_found")

    def test_custom_rest_connector_lifecycle_and_run(self) -> None:
        # From the document's URL, so refresh has something to fetch again.
        cc = self.client.create_custom_connector({"kind": "rest", "name": "echo", "url": f"{fakes.url}/openapi.json", "base_url": fakes.url, "headers": {"x-api-key": "sekret"}})
        self.assertTrue(cc["id"].startswith("cc_"))
        self.assertEqual((cc["kind"], cc["tool_count"]), ("rest", 1))
        tool_name = cc["tools"][0]["name"]
        self.assertTrue(tool_name.startswith("custom.echo."), tool_name)
        self.assertEqual(self.client.get_custom_connector(cc["id"])["id"], cc["id"])
        self.assertIn(cc["id"], [c["id"] for c in self.client.iter_custom_connectors()])
        self.assertEqual(self.client.refresh_custom_connector(cc["id"])["tool_count"], 1)
        self.assertIn("input_schema", self.client.get_tool(tool_name))

        before = len(fakes.calls)
        run = self.client.run_tool(tool_name, {"body": {"message": "hello"}})
        self.assertTrue(run["run_id"].startswith("run_"))
        self.assertEqual((run["status"], run["http_status"]), ("succeeded", 200))
        call = fakes.calls[before]
        self.assertEqual((call["method"], call["path"]), ("POST", "/api/echo"))
        self.assertEqual(call["headers"].get("x-api-key"), "sekret")
        self.assertEqual(json.loads(call["body"]), {"message": "hello"})
        self.assertEqual(self.client.runs()["runs"][0]["id"], run["run_id"])

        self.client.delete_custom_connector(cc["id"])
        with self.assertRaises(CompanionError) as ctx:
            self.client.get_custom_connector(cc["id"])
        self.assertEqual(ctx.exception.status, 404)

    def test_custom_connector_from_inline_document_is_not_refreshable(self) -> None:
        cc = self.client.create_custom_connector({"kind": "rest", "name": "inline", "openapi": OPENAPI, "base_url": fakes.url})
        self.assertEqual(cc["tool_count"], 1)
        with self.assertRaises(CompanionError) as ctx:
            self.client.refresh_custom_connector(cc["id"])
        self.assertEqual((ctx.exception.status, ctx.exception.code), (422, "not_refreshable"))
        self.client.delete_custom_connector(cc["id"])

    def test_custom_connector_to_refused_destination_is_422(self) -> None:
        with self.assertRaises(CompanionError) as ctx:
            self.client.create_custom_connector({"kind": "mcp", "url": "http://169.254.169.254/mcp"})
        self.assertEqual((ctx.exception.status, ctx.exception.code), (422, "destination_refused"))

    def test_trigger_with_a_real_signed_delivery(self) -> None:
        events = self.client.trigger_events(app="slack")["events"]
        # A poll event: the platform runs the app's list tool (against the fake) and fires on new
        # items.
        event = next((e for e in events if e["kind"] == "poll"), None)
        assert event is not None, events
        _, conn_id = connect_app(self.client, event["app"])
        trg = self.client.create_trigger(event["app"], event["name"], f"{fakes.url}/hook", connection_id=conn_id)
        self.assertTrue(trg["id"].startswith("trg_"))
        self.assertTrue(trg.get("secret", "").startswith("whsec_"))
        self.assertNotIn("secret", self.client.get_trigger(trg["id"]))
        self.assertIn(trg["id"], [t["id"] for t in self.client.iter_triggers()])

        # The jobs function polls the app (the fake answers with new items each time) and
        # delivers to the receiver. The first poll records a baseline; the next is due a poll
        # interval (60 s) later, so rounds run until a delivery arrives or the deadline passes.
        deadline = time.monotonic() + 150
        while not fakes.deliveries:
            self.assertLess(time.monotonic(), deadline, f"no delivery within 150 s; health: {self.client.get_trigger(trg['id'])['health']}")
            platform.jobs_once()
            if not fakes.deliveries:
                time.sleep(2)
        d = fakes.deliveries[0]
        payload = verify_webhook(trg["secret"], d["headers"], d["body"])
        self.assertEqual(payload["type"], "trigger.event")
        self.assertEqual(payload["data"]["trigger_id"], trg["id"])
        with self.assertRaises(WebhookVerificationError):
            verify_webhook(trg["secret"], d["headers"], d["body"].replace(b"trigger", b"tr1gger"))

        self.client.delete_trigger(trg["id"])
        with self.assertRaises(CompanionError) as ctx:
            self.client.get_trigger(trg["id"])
        self.assertEqual(ctx.exception.status, 404)

    def test_account_events(self) -> None:
        for e in self.client.events(limit=10)["events"]:
            self.assertTrue(e["id"].startswith("evt_"))
            self.assertTrue(e["type"] and e["created_at"])

    def test_quickstart_example_connects_finds_and_runs(self) -> None:
        import os
        import subprocess
        import sys
        from pathlib import Path

        example = Path(__file__).resolve().parents[1] / "examples" / "quickstart.py"
        env = {**os.environ, "COMPANION_API_KEY": platform.account("example"), "COMPANION_BASE_URL": platform.base_url}
        proc = subprocess.Popen(
            [sys.executable, str(example), "send a message to a slack channel", '{"body": {"channel": "#general", "text": "hi"}}'],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        out: list[str] = []
        opened = False
        assert proc.stdout is not None
        for line in proc.stdout:
            out.append(line)
            if line.startswith("connect: ") and not opened:
                opened = True
                # The user opens the link and presses the consent page's button; the fake
                # provider approves at once.
                url = line.split(" ", 1)[1].strip()
                with urllib.request.urlopen(url, timeout=30) as resp:
                    self.assertEqual(resp.status, 200)
                    resp.read()
                button = urllib.request.Request(url, data=b"", method="POST")
                with urllib.request.urlopen(button, timeout=30) as resp:
                    self.assertEqual(resp.status, 200)
        code = proc.wait(timeout=120)
        text = "".join(out)
        assert proc.stderr is not None
        err = proc.stderr.read()
        proc.stdout.close()
        proc.stderr.close()
        self.assertEqual(code, 0, text + err)
        self.assertTrue(opened, text)
        self.assertRegex(text, r"(?m)^found: slack_send_message ")
        self.assertRegex(text, r"(?m)^connected slack$")
        self.assertRegex(text, r"(?m)^result: succeeded ")


if __name__ == "__main__":
    unittest.main()
