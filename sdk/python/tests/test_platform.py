"""Every operation of the SDK against the real platform (``api --local`` over DynamoDB Local, see
platform_harness.py), with the development fixture catalog so the expected apps are known."""

from __future__ import annotations

import json
import re
import time
import unittest
import urllib.request

from platform_harness import Platform

from companion import Client, CompanionError

platform: Platform
key: str


def setUpModule() -> None:  # noqa: N802 (unittest's naming)
    global platform, key
    platform = Platform().start()
    key = platform.account("sdk-py")


def tearDownModule() -> None:  # noqa: N802
    platform.stop()


class CountingClient(Client):
    """Counts the requests that go over the wire, for retry tests."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.sent = 0

    def _send(self, *args, **kwargs):
        self.sent += 1
        return super()._send(*args, **kwargs)


class PlatformTest(unittest.TestCase):
    def setUp(self) -> None:
        self.client = Client(api_key=key, base_url=platform.base_url)

    def test_health_answers_ok_without_a_key(self) -> None:
        health = Client(api_key="", base_url=platform.base_url).health()
        self.assertEqual(health["status"], "ok")
        self.assertRegex(health["version"], r"^\d+\.\d+\.\d+")

    def test_catalog_pages_and_filters_by_category(self) -> None:
        first = self.client.catalog(limit=2)
        self.assertEqual([a["id"] for a in first["apps"]], ["github", "gmail"])
        self.assertIsInstance(first["next_cursor"], str)
        second = self.client.catalog(limit=2, cursor=first["next_cursor"])
        self.assertEqual([a["id"] for a in second["apps"]], ["google_sheets", "slack"])
        comms = self.client.catalog(category="communication")
        self.assertEqual([a["id"] for a in comms["apps"]], ["gmail", "slack", "zoom"])
        self.assertIsNone(comms["next_cursor"])

    def test_iter_catalog_walks_every_page(self) -> None:
        ids = [a["id"] for a in self.client.iter_catalog(limit=2)]
        self.assertEqual(ids, ["github", "gmail", "google_sheets", "slack", "stripe", "zoom"])

    def test_apps_search_has_connection_status(self) -> None:
        page = self.client.apps(search="slack")
        self.assertEqual(page["apps"][0]["id"], "slack")
        self.assertEqual(page["apps"][0]["connection_status"], "not_connected")
        self.assertEqual(len(list(self.client.iter_apps(limit=4))), 6)

    def test_get_app_answers_one_app_and_404_for_an_unknown_one(self) -> None:
        app = self.client.get_app("slack")
        self.assertEqual((app["id"], app["name"], app["tool_count"]), ("slack", "Slack", 2))
        self.assertEqual(app["connection_status"], "not_connected")
        self.assertIsInstance(app["former_ids"], list)
        self.assertIsInstance(app["documents"], list)
        with self.assertRaises(CompanionError) as ctx:
            self.client.get_app("no such app")
        self.assertEqual((ctx.exception.status, ctx.exception.code), (404, "app_not_found"))

    def test_find_tools_for_a_plain_language_task(self) -> None:
        found = self.client.find_tools("send a message to a slack channel")
        self.assertEqual(found["tools"][0]["name"], "slack_send_message")
        self.assertEqual(found["tools"][0]["connection_status"], "not_connected")
        only = self.client.find_tools("create an issue", app="github", limit=1)
        self.assertEqual([t["name"] for t in only["tools"]], ["github_create_issue"])

    def test_get_tool_has_the_input_schema(self) -> None:
        tool = self.client.get_tool("slack_send_message")
        self.assertEqual(tool["app"], "slack")
        self.assertEqual(tool["input_schema"]["required"], ["channel", "text"])
        # The development catalog gives no HTTP operation for it: the detail says so rather than guess.
        self.assertEqual((tool["method"], tool["server_url"], tool["auth"]), (None, None, []))
        self.assertEqual(sorted(tool["example_input"] or {}), ["channel", "text"])

    def test_runs_of_a_new_account_are_empty(self) -> None:
        other = Client(api_key=platform.account("runs"), base_url=platform.base_url)
        self.assertEqual(other.runs(), {"runs": [], "next_cursor": None})

    def test_unknown_key_is_401_with_problem_fields_and_no_key_in_it(self) -> None:
        bad_key = "cpk_" + "A" * 43
        bad = Client(api_key=bad_key, base_url=platform.base_url)
        with self.assertRaises(CompanionError) as ctx:
            bad.runs()
        err = ctx.exception
        self.assertEqual((err.status, err.code), (401, "unauthorized"))
        self.assertRegex(err.request_id or "", r"^req_[0-9a-f]{16}$")
        self.assertTrue(err.detail)
        for text in (str(err), repr(err), repr(bad), json.dumps(err.problem)):
            self.assertNotIn(bad_key, text)

    def test_missing_key_fails_before_any_request(self) -> None:
        none = CountingClient(api_key="", base_url=platform.base_url)
        with self.assertRaises(CompanionError) as ctx:
            none.runs()
        self.assertEqual(ctx.exception.code, "missing_api_key")
        self.assertEqual(none.sent, 0)

    def test_unknown_tool_is_404(self) -> None:
        with self.assertRaises(CompanionError) as ctx:
            self.client.get_tool("no_such_tool")
        self.assertEqual((ctx.exception.status, ctx.exception.code), (404, "tool_not_found"))

    def test_invalid_input_is_a_problem_with_field_errors(self) -> None:
        with self.assertRaises(CompanionError) as ctx:
            self.client.find_tools("", limit=99)
        err = ctx.exception
        self.assertEqual(err.status, 422)
        self.assertTrue(any(e["pointer"].startswith(("/query", "/limit")) for e in err.errors), err.problem)
        with self.assertRaises(CompanionError) as ctx:
            self.client.catalog(limit=0)
        self.assertEqual((ctx.exception.status, ctx.exception.code), (400, "invalid_parameter"))
        with self.assertRaises(CompanionError) as ctx:
            self.client.catalog(cursor="not-a-cursor")
        self.assertEqual(ctx.exception.code, "invalid_cursor")

    def test_rate_limit_is_retried_after_retry_after_then_raised(self) -> None:
        limited = platform.account("ratelimit")
        plain = Client(api_key=limited, base_url=platform.base_url, max_retries=0)
        # Start early in a one-minute window so the whole test stays inside it: the first
        # request says (RateLimit t=) how long the current window lasts; if not long enough,
        # wait it out.
        req = urllib.request.Request(f"{platform.base_url}/api/v1/runs", headers={"Authorization": f"Bearer {limited}"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            header = resp.headers.get("RateLimit") or ""
        match = re.search(r";t=(\d+)", header)
        self.assertTrue(match and 1 <= int(match.group(1)) <= 60, header)
        if int(match.group(1)) < 20:
            time.sleep(int(match.group(1)) + 0.2)
        spent = 0
        while True:
            try:
                plain.runs()
                spent += 1
            except CompanionError as err:
                self.assertEqual(err.status, 429)
                break
            self.assertLessEqual(spent, 120, "more than 120 requests passed in one window")
        self.assertGreaterEqual(spent, 100, f"only {spent} requests before the 429")

        waits: list[float] = []
        retrying = CountingClient(api_key=limited, base_url=platform.base_url, max_retries=2, sleep=waits.append)
        with self.assertRaises(CompanionError) as ctx:
            retrying.runs()
        err = ctx.exception
        self.assertEqual((err.status, err.code), (429, "rate_limited"))
        self.assertTrue(err.retry_after is not None and 1 <= err.retry_after <= 60, err.retry_after)
        self.assertEqual(retrying.sent, 3, "one request and two retries")
        self.assertEqual(len(waits), 2)
        self.assertTrue(all(1 <= w <= 60 for w in waits), waits)

        def no_wait(_: float) -> None:
            raise AssertionError("must not wait")

        impatient = CountingClient(api_key=limited, base_url=platform.base_url, max_retry_delay=0.5, sleep=no_wait)
        with self.assertRaises(CompanionError) as ctx:
            impatient.runs()
        self.assertEqual(ctx.exception.status, 429)
        self.assertEqual(impatient.sent, 1)
        # Other keys are unaffected.
        self.client.find_tools("list slack channels")


if __name__ == "__main__":
    unittest.main()
