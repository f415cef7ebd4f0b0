//! Runs: newest first, at most 25, arguments redacted by default, each account sees only its own.

mod common;

use aws_sdk_dynamodb::types::AttributeValue;
use common::{assert_documented, get, post_json, send, server};
use platform::domain::runs::RunStore;
use platform::domain::runs::{Arguments, NewRun, Run, RunStatus};
use serde_json::json;

fn new_run(tool: &str, app: &str, started_at_ms: i64, keep: Arguments) -> NewRun {
    NewRun {
        tool: tool.into(),
        app: app.into(),
        status: RunStatus::Succeeded,
        duration_ms: 42,
        started_at_ms,
        error: None,
        arguments: json!({"channel": "#ops", "text": "the launch code is 1234"}),
        keep_arguments: keep,
    }
}

#[tokio::test]
async fn latest_25_newest_first_with_redacted_arguments() {
    let srv = server().await;
    let a = srv.account("runs-a@example.com").await;
    let t0 = common::start_of_minute_ms() - 3_600_000;

    // Recorded out of order, as concurrent executions would.
    let mut recorded = Vec::new();
    for i in [
        7, 3, 29, 0, 15, 22, 1, 28, 11, 19, 4, 26, 9, 13, 2, 24, 17, 5, 27, 21, 8, 14, 25, 6, 18,
        10, 23, 12, 20, 16,
    ] {
        let mut run = new_run(
            "slack_send_message",
            "slack",
            t0 + i * 1000,
            Arguments::Redacted,
        );
        if i == 29 {
            run.status = RunStatus::Failed;
            run.error = Some("channel_not_found".into());
        }
        let run = Run::from_new(run);
        srv.store.record_run(&a.account_id, &run).await.unwrap();
        recorded.push(run);
    }
    recorded.sort_by_key(|r| std::cmp::Reverse(r.started_at_ms));

    let r = send(&srv.base, get("/api/v1/runs", Some(a.key.expose()))).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_documented(&r, "get", "/runs");
    let runs = r.body["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 25);
    let got: Vec<&str> = runs.iter().map(|r| r["id"].as_str().unwrap()).collect();
    let want: Vec<&str> = recorded[..25].iter().map(|r| r.id.as_str()).collect();
    assert_eq!(got, want, "the 25 latest, newest first");
    assert_eq!(r.body["next_cursor"], serde_json::Value::Null);

    let newest = &runs[0];
    assert_eq!(newest["status"], "failed");
    assert_eq!(newest["error"], "channel_not_found");
    assert_eq!(newest["tool"], "slack_send_message");
    assert_eq!(newest["duration_ms"], 42);
    assert_eq!(
        newest["arguments"],
        json!({"channel": "[redacted]", "text": "[redacted]"})
    );
    assert!(!r.body.to_string().contains("launch code"));
    assert_eq!(runs[1]["error"], serde_json::Value::Null);
}

#[tokio::test]
async fn arguments_are_kept_only_when_asked_and_runs_expire_after_30_days() {
    let srv = server().await;
    let a = srv.account("keep@example.com").await;
    let started = common::start_of_minute_ms();
    let run = Run::from_new(new_run(
        "gmail_send_message",
        "gmail",
        started,
        Arguments::Kept,
    ));
    srv.store.record_run(&a.account_id, &run).await.unwrap();
    let r = send(&srv.base, get("/api/v1/runs", Some(a.key.expose()))).await;
    assert_eq!(
        r.body["runs"][0]["arguments"]["text"],
        "the launch code is 1234"
    );

    // Same id twice: refused by the conditional write.
    assert!(srv.store.record_run(&a.account_id, &run).await.is_err());

    let items = srv
        .store
        .client()
        .query()
        .table_name(srv.store.table())
        .key_condition_expression("pk = :pk AND begins_with(sk, :run)")
        .expression_attribute_values(":pk", AttributeValue::S(format!("acct#{}", a.account_id)))
        .expression_attribute_values(":run", AttributeValue::S("run#".into()))
        .send()
        .await
        .unwrap();
    let ttl: i64 = items.items()[0][platform::store::table::TTL_ATTRIBUTE]
        .as_n()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(ttl, started / 1000 + 30 * 24 * 3600);
}

// Longer than 80 lines on purpose: one scenario whose steps build on the state the previous
// ones left; it reads top to bottom, and split up it would have to pass that state around.
#[tokio::test]
async fn accounts_never_see_each_others_runs_or_connections() {
    let srv = server().await;
    let a = srv.account("tenant-a@example.com").await;
    let b = srv.account("tenant-b@example.com").await;
    let t0 = common::start_of_minute_ms() - 60_000;
    let mut a_ids = Vec::new();
    for i in 0..3 {
        let run = Run::from_new(new_run(
            "github_create_issue",
            "github",
            t0 + i,
            Arguments::Redacted,
        ));
        srv.store.record_run(&a.account_id, &run).await.unwrap();
        a_ids.push(run.id);
    }
    let b_run = Run::from_new(new_run(
        "zoom_create_meeting",
        "zoom",
        t0,
        Arguments::Redacted,
    ));
    srv.store.record_run(&b.account_id, &b_run).await.unwrap();

    // A connection of A's (the shape the connect flow will write).
    srv.store
        .client()
        .put_item()
        .table_name(srv.store.table())
        .item("pk", AttributeValue::S(format!("acct#{}", a.account_id)))
        .item("sk", AttributeValue::S("conn#slack#con_1".into()))
        .item("app", AttributeValue::S("slack".into()))
        // Only active connections count as connected (revoked/needs_reauth ones do not).
        .item("status", AttributeValue::S("active".into()))
        .send()
        .await
        .unwrap();

    let rb = send(&srv.base, get("/api/v1/runs", Some(b.key.expose()))).await;
    let b_runs = rb.body["runs"].as_array().unwrap();
    assert_eq!(b_runs.len(), 1);
    assert_eq!(b_runs[0]["id"], b_run.id.as_str());
    let ra = send(&srv.base, get("/api/v1/runs", Some(a.key.expose()))).await;
    assert_eq!(ra.body["runs"].as_array().unwrap().len(), 3);

    // Every endpoint B can call: none mentions A's runs, and Slack is not connected for B.
    let find = json!({"query": "send a message to a slack channel"});
    for (label, resp) in [
        ("runs", rb),
        (
            "apps",
            send(
                &srv.base,
                get("/api/v1/apps?search=slack", Some(b.key.expose())),
            )
            .await,
        ),
        (
            "catalog",
            send(&srv.base, get("/api/v1/catalog", Some(b.key.expose()))).await,
        ),
        (
            "tool",
            send(
                &srv.base,
                get("/api/v1/tools/slack_send_message", Some(b.key.expose())),
            )
            .await,
        ),
        (
            "find",
            send(
                &srv.base,
                post_json("/api/v1/tools/find", Some(b.key.expose()), &find),
            )
            .await,
        ),
        (
            "health",
            send(&srv.base, get("/api/v1/health", Some(b.key.expose()))).await,
        ),
    ] {
        assert_eq!(resp.status, 200, "{label}: {}", resp.body);
        let text = resp.body.to_string();
        for id in &a_ids {
            assert!(!text.contains(id.as_str()), "{label} leaks A's run");
        }
        assert!(
            !text.contains(&a.account_id),
            "{label} leaks A's account id"
        );
        assert!(
            !text.contains("\"connected\""),
            "{label}: B has no connections: {text}"
        );
    }

    // A sees its own connection.
    let apps = send(
        &srv.base,
        get("/api/v1/apps?search=slack", Some(a.key.expose())),
    )
    .await;
    assert_documented(&apps, "get", "/apps");
    assert_eq!(apps.body["apps"][0]["connection_status"], "connected");
    let hits = send(
        &srv.base,
        post_json("/api/v1/tools/find", Some(a.key.expose()), &find),
    )
    .await;
    assert_eq!(hits.body["tools"][0]["connection_status"], "connected");
}
