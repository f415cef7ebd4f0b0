//! Public agent API and MCP server, deployed as a Cloudflare Worker.
//!
//! Everything but the `#[event(fetch)]` glue at the bottom is plain Rust that compiles and is
//! tested on the host; the glue only converts between `worker` types and [`reply::Reply`].

pub mod problem;
pub mod reply;
pub mod router;

#[cfg(target_arch = "wasm32")]
mod glue {
    use crate::reply::Reply;
    use worker::{Context, Env, Request, Response, Result, event};

    #[event(fetch)]
    async fn fetch(req: Request, _env: Env, _ctx: Context) -> Result<Response> {
        let url = req.url()?;
        let reply = crate::router::route(req.method().as_ref(), url.path());
        into_response(reply)
    }

    fn into_response(reply: Reply) -> Result<Response> {
        let mut resp = Response::from_bytes(reply.body)?.with_status(reply.status);
        let headers = resp.headers_mut();
        for (name, value) in &reply.headers {
            headers.set(name, value)?;
        }
        Ok(resp)
    }
}
