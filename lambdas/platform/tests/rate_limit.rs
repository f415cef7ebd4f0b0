//! 120 requests per minute per key, counted in DynamoDB; the 121st gets 429 with Retry-After.

mod common;

use common::{assert_documented, get, ratelimit, send, server};

#[tokio::test]
async fn the_121st_request_in_a_minute_is_refused_and_other_keys_are_unaffected() {
    let srv = server().await;
    let a = srv.account("a@example.com").await;
    let b = srv.account("b@example.com").await;
    let ka = a.key.expose();

    // 10 s into the window: 50 s left.
    srv.clock.advance(9_000);
    for i in 1..=120u32 {
        let r = send(&srv.base, get("/api/v1/runs", Some(ka))).await;
        assert_eq!(r.status, 200, "request {i}: {}", r.body);
        assert_eq!(ratelimit(&r), (120 - i, 50), "request {i}");
    }

    let over = send(&srv.base, get("/api/v1/runs", Some(ka))).await;
    assert_eq!(over.status, 429, "{}", over.body);
    assert_eq!(over.code(), "rate_limited");
    assert_eq!(over.header("retry-after"), Some("50"));
    assert_eq!(over.body["retry_after"], 50);
    assert_eq!(ratelimit(&over), (0, 50));
    assert_documented(&over, "get", "/runs");

    // Refused requests are not counted, and still refused.
    let again = send(&srv.base, get("/api/v1/catalog", Some(ka))).await;
    assert_eq!(again.status, 429);

    // Another key has its own budget.
    let rb = send(&srv.base, get("/api/v1/runs", Some(b.key.expose()))).await;
    assert_eq!(rb.status, 200);
    assert_eq!(ratelimit(&rb), (119, 50));

    // The next window starts afresh.
    srv.clock.advance(50_000);
    let next = send(&srv.base, get("/api/v1/runs", Some(ka))).await;
    assert_eq!(next.status, 200, "{}", next.body);
    assert_eq!(ratelimit(&next), (119, 60));
}

#[tokio::test]
async fn anonymous_catalog_requests_are_counted_per_client_address() {
    let srv = server().await;
    let first = send(&srv.base, get("/api/v1/catalog", None)).await;
    assert_eq!(first.status, 200);
    assert_documented(&first, "get", "/catalog");
    let second = send(&srv.base, get("/api/v1/catalog", None)).await;
    assert_eq!(ratelimit(&second).0, ratelimit(&first).0 - 1);

    // A key's requests do not draw on the address's budget.
    let a = srv.account("c@example.com").await;
    let keyed = send(&srv.base, get("/api/v1/catalog", Some(a.key.expose()))).await;
    assert_eq!(ratelimit(&keyed).0, 119);
}
