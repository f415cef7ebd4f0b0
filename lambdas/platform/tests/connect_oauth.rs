//! Connecting an OAuth app end to end against a real authorization server (npm
//! oauth2-mock-server, PKCE checked) on loopback: links, the hosted pages, the callback, the
//! stored connection, refresh under concurrency, and expiry.

mod common;
mod conn_common;

use std::time::Duration;

use aws_sdk_dynamodb::types::AttributeValue;
use common::{assert_documented, get};
use conn_common::{
    ConnServer, Setup, acme_oauth, browse, conn_server, html, location, oauth_dance, open_link,
    query_of, spawn_peer,
};
use platform::domain::clock::Clock;
use platform::store::table::{PK, SK};
use serde_json::{Value, json};

/// Every attribute value of the test's table, for "is this secret stored in the clear?".
async fn table_text(srv: &ConnServer) -> String {
    let out = srv
        .store
        .client()
        .scan()
        .table_name(srv.store.table())
        .send()
        .await
        .unwrap();
    format!("{:?}", out.items())
}

async fn connected(srv: &ConnServer, key: &str, label: &str) -> Value {
    let link = srv.link(key, "acme", json!({"label": label})).await;
    assert_eq!(link.status, 201, "{}", link.body);
    let done = oauth_dance(link.body["url"].as_str().unwrap()).await;
    assert_eq!(done.status, 200, "{}", html(&done));
    let list = srv.connections(key).await;
    list.body["connections"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|c| c["label"] == label)
        .cloned()
        .expect("the new connection is listed")
}

// Longer than 80 lines on purpose: one scenario whose steps build on the state the previous
// ones left; it reads top to bottom, and split up it would have to pass that state around.
#[tokio::test]
async fn oauth_connect_stores_an_encrypted_connection_and_runs_with_it() {
    let peer = spawn_peer();
    let srv = conn_server(Setup {
        oauth_apps: acme_oauth(&peer),
        ..Setup::default()
    })
    .await;
    let a = srv.account("oauth@example.com").await;
    let k = a.key.expose();

    let link = srv.link(k, "acme", json!({"label": "work"})).await;
    assert_eq!(link.status, 201, "{}", link.body);
    assert_documented(&link, "post", "/apps/{app}/connect");
    assert_eq!(link.body["auth"], "oauth2");
    let url = link.body["url"].as_str().unwrap().to_owned();
    assert!(
        url.starts_with(&format!("{}/connect/cl_", srv.base)),
        "{url}"
    );
    let expires_ms = link.body["expires_at"]
        .as_str()
        .unwrap()
        .parse::<jiff::Timestamp>()
        .unwrap()
        .as_millisecond();
    assert_eq!(
        expires_ms,
        srv.clock.now_ms() + 30 * 60 * 1000,
        "30 minutes"
    );

    // The hosted page sends the browser to the provider with state and PKCE S256.
    let open = open_link(&url).await;
    assert_eq!(open.status, 303, "{}", html(&open));
    assert_eq!(open.header("referrer-policy"), Some("no-referrer"));
    assert_eq!(open.header("cache-control"), Some("no-store"));
    let to_provider = location(&open);
    assert!(to_provider.starts_with(&format!("{}/authorize?", peer.url)));
    let q = query_of(&to_provider);
    assert_eq!(q["response_type"], "code");
    assert_eq!(q["client_id"], "acme-client");
    assert_eq!(q["redirect_uri"], format!("{}/oauth/callback", srv.base));
    assert_eq!(q["scope"], "notes:read notes:write");
    assert_eq!(q["code_challenge_method"], "S256");
    assert_eq!(q["code_challenge"].len(), 43);
    assert!(q["state"].len() >= 43);

    // The provider redirects back with a code; the callback exchanges it (the mock server checks
    // the verifier against the challenge) and stores the connection.
    let consent = browse(&to_provider).await;
    assert_eq!(consent.status, 302);
    let callback = location(&consent);
    assert!(callback.starts_with(&format!("{}/oauth/callback?", srv.base)));
    let done = browse(&callback).await;
    assert_eq!(done.status, 200, "{}", html(&done));
    assert!(
        done.header("content-type")
            .unwrap()
            .starts_with("text/html")
    );
    let page = html(&done);
    assert!(page.contains("Acme Notes is connected"), "{page}");
    assert!(
        page.contains("johndoe"),
        "identity from the ID token: {page}"
    );

    let stats = peer.stats().await;
    assert_eq!(stats["authorization_code"], 1);
    assert_eq!(
        stats["client_auth"],
        json!(["basic"]),
        "client_secret_basic by default"
    );

    let list = srv.connections(k).await;
    assert_eq!(list.status, 200, "{}", list.body);
    assert_documented(&list, "get", "/connections");
    let conns = list.body["connections"].as_array().unwrap();
    assert_eq!(conns.len(), 1);
    let c = &conns[0];
    assert_eq!(c["app"], "acme");
    assert_eq!(c["label"], "work");
    assert_eq!(c["identity"], "johndoe");
    assert_eq!(c["status"], "active");
    assert_eq!(c["auth"], "oauth2");
    assert_eq!(c["is_default"], true);
    assert!(c["expires_at"].is_string(), "{c}");
    let conn_id = c["id"].as_str().unwrap().to_owned();

    // The app now shows as connected.
    let apps = common::send(&srv.base, get("/api/v1/apps?search=acme", Some(k))).await;
    assert_eq!(apps.body["apps"][0]["connection_status"], "connected");

    // A run without connection_id uses the default connection's bearer token.
    let run = srv.run(k, "acme.get_me", json!({"arguments": {}})).await;
    assert_eq!(run.status, 200, "{}", run.body);
    assert_documented(&run, "post", "/tools/{name}/run");
    assert_eq!(run.body["connection_id"], conn_id.as_str());
    assert_eq!(run.body["data"]["path"], "/api/me");
    let auth = run.body["data"]["authorization"]
        .as_str()
        .unwrap()
        .to_owned();
    let token = auth
        .strip_prefix("Bearer ")
        .expect("bearer token")
        .to_owned();
    assert!(token.len() > 100, "a JWT access token");

    // Neither the access token nor the refresh token is stored in the clear.
    let stored = table_text(&srv).await;
    assert!(!stored.contains(&token), "access token stored in the clear");
    let item = srv
        .store
        .client()
        .get_item()
        .table_name(srv.store.table())
        .key(PK, AttributeValue::S(format!("acct#{}", a.account_id)))
        .key(SK, AttributeValue::S(format!("conn#{conn_id}")))
        .send()
        .await
        .unwrap();
    let item = item.item().unwrap();
    assert!(item.contains_key("sealed"));
    assert!(!item.contains_key("access_token") && !item.contains_key("refresh_token"));

    // The link worked once; the callback cannot be replayed.
    let again = browse(&url).await;
    assert_eq!(again.status, 404, "{}", html(&again));
    assert!(html(&again).contains("already used"));
    let replay = browse(&callback).await;
    assert_eq!(replay.status, 400, "{}", html(&replay));
    assert_eq!(
        srv.connections(k).await.body["connections"]
            .as_array()
            .unwrap()
            .len(),
        1
    );

    // Another account sees nothing of it.
    let b = srv.account("other@example.com").await;
    let theirs = srv.connections(b.key.expose()).await;
    assert_eq!(theirs.body["connections"], json!([]));
    let foreign = srv
        .run(
            b.key.expose(),
            "acme.get_me",
            json!({"arguments": {}, "connection_id": conn_id}),
        )
        .await;
    assert_eq!(
        (foreign.status, foreign.code()),
        (404, "connection_not_found")
    );
}

// Longer than 80 lines on purpose: one scenario whose steps build on the state the previous
// ones left; it reads top to bottom, and split up it would have to pass that state around.
#[tokio::test]
async fn expired_links_bad_state_and_denied_consent_store_nothing() {
    let peer = spawn_peer();
    let srv = conn_server(Setup {
        oauth_apps: acme_oauth(&peer),
        ..Setup::default()
    })
    .await;
    let a = srv.account("refused@example.com").await;
    let k = a.key.expose();
    let none = || async { srv.connections(k).await.body["connections"].clone() };

    // Expired: 30 minutes and a second later.
    let link = srv.link(k, "acme", json!({})).await;
    srv.clock.advance(30 * 60 * 1000 + 1000);
    let late = browse(link.body["url"].as_str().unwrap()).await;
    assert_eq!(late.status, 410, "{}", html(&late));
    assert!(html(&late).contains("expired"));
    assert_eq!(none().await, json!([]));

    // A callback with a state this server never issued.
    let forged = browse(&format!(
        "{}/oauth/callback?state=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA&code=stolen",
        srv.base
    ))
    .await;
    assert_eq!(forged.status, 400, "{}", html(&forged));
    assert!(html(&forged).contains("unknown"));
    let no_state = browse(&format!("{}/oauth/callback?code=x", srv.base)).await;
    assert_eq!(no_state.status, 400);
    assert_eq!(none().await, json!([]));
    assert_eq!(
        peer.stats().await["authorization_code"],
        0,
        "no code was exchanged"
    );

    // A mismatched state: the provider's callback with the state swapped for another attempt's.
    let l1 = srv.link(k, "acme", json!({})).await;
    let l2 = srv.link(k, "acme", json!({})).await;
    let p1 = location(&open_link(l1.body["url"].as_str().unwrap()).await);
    let p2 = location(&open_link(l2.body["url"].as_str().unwrap()).await);
    let cb1 = location(&browse(&p1).await);
    let state2 = query_of(&p2)["state"].clone();
    let mut swapped = url::Url::parse(&cb1).unwrap();
    let code1 = query_of(&cb1)["code"].clone();
    swapped
        .query_pairs_mut()
        .clear()
        .append_pair("code", &code1)
        .append_pair("state", &format!("{state2}x"));
    let mismatch = browse(swapped.as_str()).await;
    assert_eq!(mismatch.status, 400, "{}", html(&mismatch));
    assert_eq!(none().await, json!([]));

    // Denied consent, with and without a redirect back to the caller's app.
    peer.mode("deny=1").await;
    let plain = srv.link(k, "acme", json!({})).await;
    let denied = oauth_dance(plain.body["url"].as_str().unwrap()).await;
    assert_eq!(denied.status, 403, "{}", html(&denied));
    assert!(html(&denied).contains("access was not granted"));
    let with_redirect = srv
        .link(
            k,
            "acme",
            json!({"redirect_url": "https://app.example.com/done?x=1"}),
        )
        .await;
    let back = oauth_dance(with_redirect.body["url"].as_str().unwrap()).await;
    assert_eq!(back.status, 303);
    assert_eq!(
        location(&back),
        "https://app.example.com/done?x=1&status=error&error=access_denied"
    );
    assert_eq!(none().await, json!([]));
    assert_eq!(peer.stats().await["authorization_code"], 0);

    // Links for unknown or unconfigured apps are refused up front.
    let unknown = srv.link(k, "nope", json!({})).await;
    assert_eq!((unknown.status, unknown.code()), (404, "app_not_found"));
    assert_documented(&unknown, "post", "/apps/{app}/connect");
    let legacy = srv.link(k, "legacy", json!({})).await;
    assert_eq!(
        (legacy.status, legacy.code()),
        (422, "oauth_not_configured")
    );
    let open = srv.link(k, "open", json!({})).await;
    assert_eq!((open.status, open.code()), (422, "app_not_connectable"));
    let bad = srv
        .link(k, "acme", json!({"redirect_url": "javascript:alert(1)"}))
        .await;
    assert_eq!((bad.status, bad.code()), (422, "invalid_request"));
    let junk = srv.link(k, "acme", json!({"colour": "red"})).await;
    assert_eq!((junk.status, junk.code()), (422, "invalid_request"));
}

// Longer than 80 lines on purpose: one scenario whose steps build on the state the previous
// ones left; it reads top to bottom, and split up it would have to pass that state around.
#[tokio::test]
async fn success_redirects_back_and_several_connections_have_one_default() {
    let peer = spawn_peer();
    let srv = conn_server(Setup {
        oauth_apps: acme_oauth(&peer),
        ..Setup::default()
    })
    .await;
    let a = srv.account("several@example.com").await;
    let k = a.key.expose();

    let link = srv
        .link(
            k,
            "acme",
            json!({"label": "home", "redirect_url": "https://app.example.com/cb"}),
        )
        .await;
    let back = oauth_dance(link.body["url"].as_str().unwrap()).await;
    assert_eq!(back.status, 303);
    let q = query_of(&location(&back));
    assert_eq!(q["status"], "success");
    let first = q["connection_id"].clone();
    srv.clock.advance(1000);
    let second = connected(&srv, k, "office").await;
    let second_id = second["id"].as_str().unwrap().to_owned();
    assert_eq!(second["is_default"], false);

    let list = srv.connections(k).await.body["connections"].clone();
    assert_eq!(list.as_array().unwrap().len(), 2);
    assert_eq!(list[0]["id"], first.as_str());
    assert_eq!(list[0]["is_default"], true);

    // Runs go to the default unless told otherwise.
    let r = srv.run(k, "acme.get_me", json!({"arguments": {}})).await;
    assert_eq!(r.body["connection_id"], first.as_str());
    let r = srv
        .run(
            k,
            "acme.get_me",
            json!({"arguments": {}, "connection_id": second_id}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["connection_id"], second_id.as_str());

    // Deleting the default revokes it (secrets erased) and makes the next one the default.
    let del = common::send(
        &srv.base,
        common::Call {
            method: http::Method::DELETE,
            path: &format!("/api/v1/connections/{first}"),
            key: Some(k),
            content_type: None,
            body: Vec::new(),
        },
    )
    .await;
    assert_eq!(del.status, 204, "{}", String::from_utf8_lossy(&del.raw));
    assert!(del.raw.is_empty());
    let list = srv.connections(k).await.body["connections"].clone();
    assert_eq!(list[0]["status"], "revoked");
    assert_eq!(list[0]["is_default"], false);
    assert_eq!(list[1]["is_default"], true);
    let r = srv.run(k, "acme.get_me", json!({"arguments": {}})).await;
    assert_eq!(r.body["connection_id"], second_id.as_str());
    let revoked = srv
        .run(
            k,
            "acme.get_me",
            json!({"arguments": {}, "connection_id": first}),
        )
        .await;
    assert_eq!(
        (revoked.status, revoked.code()),
        (404, "connection_not_found")
    );
    let again = common::send(
        &srv.base,
        common::Call {
            method: http::Method::DELETE,
            path: &format!("/api/v1/connections/{first}"),
            key: Some(k),
            content_type: None,
            body: Vec::new(),
        },
    )
    .await;
    assert_eq!((again.status, again.code()), (404, "connection_not_found"));
    assert_documented(&again, "delete", "/connections/{id}");

    // Paging and the app filter.
    let page = common::send(&srv.base, get("/api/v1/connections?limit=1", Some(k))).await;
    assert_eq!(page.body["connections"].as_array().unwrap().len(), 1);
    let cursor = page.body["next_cursor"].as_str().unwrap().to_owned();
    let next = common::send(
        &srv.base,
        get(
            &format!("/api/v1/connections?limit=1&cursor={cursor}"),
            Some(k),
        ),
    )
    .await;
    assert_eq!(next.body["connections"][0]["id"], second_id.as_str());
    assert_eq!(next.body["next_cursor"], Value::Null);
    let other = common::send(&srv.base, get("/api/v1/connections?app=stripe", Some(k))).await;
    assert_eq!(other.body["connections"], json!([]));
}

#[tokio::test]
async fn concurrent_runs_near_expiry_refresh_the_token_exactly_once() {
    let peer = spawn_peer();
    let srv = conn_server(Setup {
        oauth_apps: acme_oauth(&peer),
        ..Setup::default()
    })
    .await;
    let a = srv.account("refresh@example.com").await;
    let k = a.key.expose().to_owned();
    let c = connected(&srv, &k, "main").await;
    let before = srv.run(&k, "acme.get_me", json!({"arguments": {}})).await;
    let old_auth = before.body["data"]["authorization"].clone();
    assert_eq!(
        peer.stats().await["refresh_token"],
        0,
        "a fresh token is not refreshed"
    );

    // 30 s before expiry (the token lives 3600 s): inside the refresh-ahead window. The token
    // endpoint answers slowly so that all runs overlap the one refresh.
    srv.clock.advance(3_570_000);
    peer.mode("token_delay_ms=400").await;
    let runs = (0..8).map(|_| {
        let (base, k) = (srv.base.clone(), k.clone());
        tokio::spawn(async move {
            common::send(
                &base,
                common::post_json(
                    "/api/v1/tools/acme.get_me/run",
                    Some(&k),
                    &json!({"arguments": {}}),
                ),
            )
            .await
        })
    });
    let mut auths = Vec::new();
    for r in runs {
        let r = r.await.unwrap();
        assert_eq!(r.status, 200, "{}", r.body);
        auths.push(r.body["data"]["authorization"].clone());
    }
    let stats = peer.stats().await;
    assert_eq!(stats["refresh_token"], 1, "exactly one refresh: {stats}");
    assert!(
        auths.iter().all(|x| *x == auths[0]),
        "all runs use the new token"
    );
    assert_ne!(auths[0], old_auth);

    // The new token is stored, so later runs do not refresh again.
    let listed = srv.connections(&k).await.body["connections"][0].clone();
    assert_ne!(listed["expires_at"], c["expires_at"]);
    let later = srv.run(&k, "acme.get_me", json!({"arguments": {}})).await;
    assert_eq!(later.body["data"]["authorization"], auths[0]);
    assert_eq!(peer.stats().await["refresh_token"], 1);
}

#[tokio::test]
async fn transient_token_errors_are_retried_and_a_held_lease_is_a_503_not_a_provider_error() {
    let peer = spawn_peer();
    let srv = conn_server(Setup {
        oauth_apps: acme_oauth(&peer),
        lease_wait: Duration::from_millis(300),
        ..Setup::default()
    })
    .await;
    let a = srv.account("transient@example.com").await;
    let k = a.key.expose();
    let c = connected(&srv, k, "main").await;
    srv.clock.advance(3_590_000);

    // Two 503s, then success: the third try wins within one run.
    peer.mode("fail_refresh=2").await;
    let r = srv.run(k, "acme.get_me", json!({"arguments": {}})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(peer.stats().await["refresh_token"], 3);

    // Three 503s exhaust the tries: a provider failure (502), the connection stays active.
    srv.clock.advance(3_590_000);
    peer.mode("fail_refresh=3").await;
    let r = srv.run(k, "acme.get_me", json!({"arguments": {}})).await;
    assert_eq!(
        (r.status, r.code()),
        (502, "token_refresh_failed"),
        "{}",
        r.body
    );
    assert_documented(&r, "post", "/tools/{name}/run");
    assert_eq!(
        srv.connections(k).await.body["connections"][0]["status"],
        "active"
    );

    // Someone else holds the lease and never finishes: after the wait, 503 refresh_in_progress.
    let until = srv.clock.now_ms() + 30_000;
    srv.store
        .client()
        .update_item()
        .table_name(srv.store.table())
        .key(PK, AttributeValue::S(format!("acct#{}", a.account_id)))
        .key(
            SK,
            AttributeValue::S(format!("conn#{}", c["id"].as_str().unwrap())),
        )
        .update_expression("SET lease_until_ms = :u")
        .expression_attribute_values(":u", AttributeValue::N(until.to_string()))
        .send()
        .await
        .unwrap();
    let calls = peer.stats().await["refresh_token"].clone();
    let r = srv.run(k, "acme.get_me", json!({"arguments": {}})).await;
    assert_eq!(
        (r.status, r.code()),
        (503, "refresh_in_progress"),
        "{}",
        r.body
    );
    assert_eq!(
        peer.stats().await["refresh_token"],
        calls,
        "no refresh without the lease"
    );
}

#[tokio::test]
async fn invalid_grant_marks_needs_reauth_and_records_connection_expired_once() {
    let peer = spawn_peer();
    let srv = conn_server(Setup {
        oauth_apps: acme_oauth(&peer),
        ..Setup::default()
    })
    .await;
    let a = srv.account("expired@example.com").await;
    let k = a.key.expose();
    let c = connected(&srv, k, "main").await;
    let id = c["id"].as_str().unwrap().to_owned();

    peer.mode("invalid_grant=1").await;
    srv.clock.advance(3_600_000);
    let r = srv.run(k, "acme.get_me", json!({"arguments": {}})).await;
    assert_eq!((r.status, r.code()), (409, "needs_reauth"), "{}", r.body);
    assert_documented(&r, "post", "/tools/{name}/run");
    assert_eq!(r.body["connection_id"], id.as_str());
    assert!(
        r.body["connect_url"]
            .as_str()
            .unwrap()
            .starts_with(&format!("{}/connect/cl_", srv.base))
    );
    let listed = srv.connections(k).await.body["connections"][0].clone();
    assert_eq!(listed["status"], "needs_reauth");
    let apps = common::send(&srv.base, get("/api/v1/apps?search=acme", Some(k))).await;
    assert_eq!(apps.body["apps"][0]["connection_status"], "not_connected");

    let events = platform::domain::events::list_events(&srv.store, &a.account_id, 10)
        .await
        .unwrap();
    let expired: Vec<_> = events
        .iter()
        .filter(|e| format!("{e:?}").contains("connection.expired"))
        .collect();
    assert_eq!(expired.len(), 1, "{events:?}");
    assert!(format!("{:?}", expired[0]).contains(&id));

    // The next run tries one refresh before answering needs_reauth again; no second event.
    let r = srv.run(k, "acme.get_me", json!({"arguments": {}})).await;
    assert_eq!(r.code(), "needs_reauth");
    assert_eq!(peer.stats().await["refresh_token"], 2);
    let events = platform::domain::events::list_events(&srv.store, &a.account_id, 10)
        .await
        .unwrap();
    assert_eq!(
        events
            .iter()
            .filter(|e| format!("{e:?}").contains("connection.expired"))
            .count(),
        1
    );

    // Reconnecting through the offered link gives an active connection again.
    peer.mode("invalid_grant=0").await;
    let done = oauth_dance(r.body["connect_url"].as_str().unwrap()).await;
    assert_eq!(done.status, 200, "{}", html(&done));
    let runs = srv.runs(k).await;
    assert!(runs.iter().any(|r| r["status"] == "connection_required"));
}

#[tokio::test]
async fn provider_quirks_pkce_off_client_secret_post_and_comma_scopes() {
    let peer = spawn_peer();
    let mut apps = acme_oauth(&peer);
    apps["acme"]["pkce"] = json!(false);
    apps["acme"]["token_auth"] = json!("client_secret_post");
    apps["acme"]["scope_separator"] = json!(",");
    apps["acme"]["authorize_params"] = json!({"access_type": "offline"});
    let srv = conn_server(Setup {
        oauth_apps: apps,
        ..Setup::default()
    })
    .await;
    let a = srv.account("quirks@example.com").await;
    let k = a.key.expose();
    let link = srv.link(k, "acme", json!({})).await;
    let to_provider = location(&open_link(link.body["url"].as_str().unwrap()).await);
    let q = query_of(&to_provider);
    assert!(!q.contains_key("code_challenge"), "{to_provider}");
    assert_eq!(q["scope"], "notes:read,notes:write");
    assert_eq!(q["access_type"], "offline");
    let done = browse(&location(&browse(&to_provider).await)).await;
    assert_eq!(done.status, 200, "{}", html(&done));
    assert_eq!(peer.stats().await["client_auth"], json!(["post"]));
}

/// The hosted page sends the user's browser to `redirect_url`: anything but `https` (or plain
/// `http` to this machine, for development) would make the platform's domain a redirector to
/// any site, with a connection id in the query.
#[tokio::test]
async fn redirect_url_must_be_https_or_loopback_http() {
    let peer = spawn_peer();
    let srv = conn_server(Setup {
        oauth_apps: acme_oauth(&peer),
        ..Setup::default()
    })
    .await;
    let a = srv.account("redirects@example.com").await;
    let k = a.key.expose();

    for bad in [
        "http://evil.example/cb",
        "http://app.example.com/done",
        "http://127.0.0.1.evil.example/cb",
        "http://localhost.evil.example/cb",
        "javascript:alert(1)",
        "data:text/html,<script>alert(1)</script>",
        "ftp://app.example.com/",
        "//evil.example/cb",
        "/relative/path",
        "https://user:pw@app.example.com/cb",
        "https://app.example.com@evil.example/cb",
        "",
    ] {
        let r = srv.link(k, "acme", json!({"redirect_url": bad})).await;
        assert_eq!((r.status, r.code()), (422, "invalid_request"), "{bad:?}");
        assert_eq!(
            r.header("content-type"),
            Some("application/problem+json"),
            "{bad:?}"
        );
        let detail = r.body["detail"].as_str().unwrap_or("");
        assert!(detail.contains("redirect_url"), "{bad:?}: {detail}");
        assert_documented(&r, "post", "/apps/{app}/connect");
    }
    let long = format!("https://app.example.com/{}", "a".repeat(2100));
    let r = srv.link(k, "acme", json!({"redirect_url": long})).await;
    assert_eq!((r.status, r.code()), (422, "invalid_request"));
    // Nothing was created: no link, no connection.
    assert_eq!(srv.connections(k).await.body["connections"], json!([]));

    // Loopback http is fine for development, and the browser really lands there.
    for ok in [
        "http://127.0.0.1:3000/cb",
        "http://localhost:3000/cb",
        "http://[::1]:3000/cb",
        "https://app.example.com/cb",
    ] {
        let r = srv.link(k, "acme", json!({"redirect_url": ok})).await;
        assert_eq!(r.status, 201, "{ok}: {}", r.body);
    }
    peer.mode("deny=1").await;
    let dev = srv
        .link(
            k,
            "acme",
            json!({"redirect_url": "http://127.0.0.1:3000/cb"}),
        )
        .await;
    let back = oauth_dance(dev.body["url"].as_str().unwrap()).await;
    assert_eq!(back.status, 303);
    assert_eq!(
        location(&back),
        "http://127.0.0.1:3000/cb?status=error&error=access_denied"
    );
}

/// POSTs an empty form to `url` with extra headers (what a browser adds on submission).
async fn post_with(url: &str, headers: &[(&str, &str)]) -> common::Resp {
    let u = url::Url::parse(url).unwrap();
    let base = format!("http://{}:{}", u.host_str().unwrap(), u.port().unwrap());
    let call = common::Call {
        method: http::Method::POST,
        path: u.path(),
        key: None,
        content_type: Some("application/x-www-form-urlencoded"),
        body: Vec::new(),
    };
    common::send_with_headers(&base, call, headers).await
}

#[tokio::test]
async fn link_previews_do_not_use_a_link_up_and_only_its_own_page_can() {
    let peer = spawn_peer();
    let srv = conn_server(Setup {
        oauth_apps: acme_oauth(&peer),
        ..Setup::default()
    })
    .await;
    let a = srv.account("preview@example.com").await;
    let k = a.key.expose();
    let link = srv.link(k, "acme", json!({})).await;
    let url = link.body["url"].as_str().unwrap().to_owned();

    // A chat app's previewer and a mail scanner fetch the link first: each sees the consent page,
    // nothing is used up, no state is made and the provider is not contacted.
    for _ in 0..3 {
        let seen = browse(&url).await;
        assert_eq!(seen.status, 200, "{}", html(&seen));
        assert_eq!(seen.header("cache-control"), Some("no-store"));
        assert!(html(&seen).contains("Continue to"));
        assert!(seen.header("location").is_none());
    }
    // A page elsewhere that learned the URL cannot submit it for the user.
    for headers in [
        &[("origin", "https://evil.example")][..],
        &[("sec-fetch-site", "cross-site")][..],
    ] {
        let forged = post_with(&url, headers).await;
        assert_eq!(forged.status, 403, "{headers:?}: {}", html(&forged));
    }
    // The person presses the button (a same-origin form POST: `Origin: null` under
    // `no-referrer`): the link is used up now, and only now.
    let go = post_with(
        &url,
        &[("origin", "null"), ("sec-fetch-site", "same-origin")],
    )
    .await;
    assert_eq!(go.status, 303, "{}", html(&go));
    assert!(location(&go).starts_with(&format!("{}/authorize?", peer.url)));
    let again = post_with(&url, &[]).await;
    assert_eq!(again.status, 404, "{}", html(&again));
    assert_eq!(browse(&url).await.status, 404);
    let done = browse(&location(&browse(&location(&go)).await)).await;
    assert_eq!(done.status, 200, "{}", html(&done));
}

#[tokio::test]
async fn connect_params_templated_into_hosts_are_checked_against_the_apps_patterns() {
    let peer = spawn_peer();
    let mut apps = acme_oauth(&peer);
    // The provider's endpoints live on a per-tenant host; `region` has a declared pattern,
    // `tenant` has none (so it must be one host label).
    apps["acme"]["authorize_url"] = json!("https://{tenant}.acme.example/{region}/authorize");
    apps["acme"]["token_url"] = json!("https://{tenant}.acme.example/{region}/token");
    apps["acme"]["params"] = json!({"region": {"pattern": "[a-z]{2}-[a-z]+-[0-9]"}});
    let srv = conn_server(Setup {
        oauth_apps: apps,
        ..Setup::default()
    })
    .await;
    let a = srv.account("params@example.com").await;
    let k = a.key.expose();
    let link = |tenant: &str, region: &str| {
        srv.link(
            k,
            "acme",
            json!({"params": {"tenant": tenant, "region": region}}),
        )
    };

    let ok = link("tenant-1", "eu-west-1").await;
    assert_eq!(ok.status, 201, "{}", ok.body);
    for tenant in [
        "evil.com/",
        "a@b",
        "..",
        "%2f",
        "evil.com",
        "evil.com#",
        "-x",
        "x-",
        "a b",
        "",
        "evil.com%2f",
        "xn--",
        &"a".repeat(64),
    ] {
        let r = link(tenant, "eu-west-1").await;
        assert_eq!(r.status, 422, "tenant {tenant:?}: {}", r.body);
        assert_documented(&r, "post", "/apps/{app}/connect");
    }
    for region in [
        "EU",
        "eu-west-1/../x",
        "eu-west-1.evil.com",
        "..",
        "eu_west_1",
    ] {
        let r = link("tenant-1", region).await;
        assert_eq!(r.status, 422, "region {region:?}: {}", r.body);
        let detail = r.body["detail"].as_str().unwrap_or("");
        if r.code() == "invalid_request" {
            assert!(detail.contains("params.region"), "{region:?}: {detail}");
        }
    }
    assert_eq!(srv.connections(k).await.body["connections"], json!([]));
}

#[tokio::test]
async fn redirect_urls_are_held_to_the_accounts_allow_list() {
    use platform::domain::connections::ConnectionStore;
    let peer = spawn_peer();
    let srv = conn_server(Setup {
        oauth_apps: acme_oauth(&peer),
        ..Setup::default()
    })
    .await;
    let a = srv.account("allow@example.com").await;
    let k = a.key.expose();
    let link = |to: &'static str| srv.link(k, "acme", json!({"redirect_url": to}));

    // The first https origin the account uses becomes its allow list.
    assert_eq!(link("https://app.example.com/done").await.status, 201);
    assert_eq!(link("https://app.example.com/other?x=1").await.status, 201);
    // Any other origin is refused: another host, a look-alike, another port or scheme.
    for evil in [
        "https://evil.example/phish",
        "https://app.example.com.evil.example/cb",
        "https://app.example.com:8443/cb",
        "https://sub.app.example.com/cb",
    ] {
        let r = link(evil).await;
        assert_eq!((r.status, r.code()), (422, "invalid_request"), "{evil}");
        let detail = r.body["detail"].as_str().unwrap_or("");
        assert!(detail.contains("allow list"), "{evil}: {detail}");
        assert_documented(&r, "post", "/apps/{app}/connect");
    }
    // Loopback development URLs need no listing.
    assert_eq!(link("http://127.0.0.1:3000/cb").await.status, 201);
    // An operator adds a second origin (`api admin allow-redirect`).
    srv.store
        .add_redirect_origin(&a.account_id, "https://evil.example", false)
        .await
        .unwrap();
    assert_eq!(link("https://evil.example/phish").await.status, 201);
    // Another account's list is its own.
    let b = srv.account("other@example.com").await;
    let r = srv
        .link(
            b.key.expose(),
            "acme",
            json!({"redirect_url": "https://b.example/cb"}),
        )
        .await;
    assert_eq!(r.status, 201);
}
