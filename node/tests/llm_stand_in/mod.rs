//! Stand-in OpenAI-compatible servers that misbehave on purpose (named as such: no real
//! server misbehaves on request), shared by the LLM endpoint tests and the network test.

#![allow(dead_code)]

use std::time::Duration;

use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpListener,
};

/// How a stand-in server answers every request.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Behaviour {
    /// Waits this long, then answers well.
    Slow(Duration),
    /// 200 with a body that is no chat completion.
    Garbage,
    /// 200 with a chat completion whose content is not the reply schema.
    OffSchema,
    /// 200 with 10 MB of body, no length announced.
    Huge,
    /// Answers `{"label": "entailed"}` (a scripted model).
    Entailed,
    /// Refuses requests with `response_format` (400), answers the others as `Entailed`.
    RefusesSchema,
}

fn completion(content: &str) -> String {
    serde_json::json!({
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": content}}]
    })
    .to_string()
}

/// Starts a stand-in server; returns its base URL.
pub(crate) async fn stand_in(b: Behaviour) -> String {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = l.accept().await else {
                return;
            };
            tokio::spawn(async move {
                // Read the request head and body (bounded; the client sends little).
                let mut buf = vec![0u8; 64 * 1024];
                let mut n = 0;
                loop {
                    let Ok(k) = s.read(&mut buf[n..]).await else {
                        return;
                    };
                    if k == 0 {
                        return;
                    }
                    n += k;
                    let text = String::from_utf8_lossy(&buf[..n]);
                    if let Some(end) = text.find("\r\n\r\n") {
                        let len = text[..end]
                            .lines()
                            .find_map(|l| {
                                l.to_ascii_lowercase()
                                    .strip_prefix("content-length:")
                                    .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                            })
                            .unwrap_or(0);
                        if n >= end + 4 + len {
                            break;
                        }
                    }
                    if n == buf.len() {
                        return;
                    }
                }
                let head = |len: Option<usize>| {
                    match len {
                    Some(l) => format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {l}\r\nconnection: close\r\n\r\n"
                    ),
                    None => "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n".to_string(),
                }
                };
                let asked = String::from_utf8_lossy(&buf[..n]).to_string();
                let body = match b {
                    Behaviour::RefusesSchema if asked.contains("response_format") => {
                        let body = "{\"error\": \"response_format is not supported\"}";
                        let _ = s
                            .write_all(
                                format!(
                                    "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                                    body.len()
                                )
                                .as_bytes(),
                            )
                            .await;
                        return;
                    }
                    Behaviour::RefusesSchema => completion("{\"label\": \"entailed\"}"),
                    Behaviour::Slow(d) => {
                        tokio::time::sleep(d).await;
                        completion("{\"label\": \"entailed\"}")
                    }
                    Behaviour::Garbage => "<html>I am a teapot</html>".to_string(),
                    Behaviour::OffSchema => completion("Yes, the step follows."),
                    Behaviour::Entailed => completion("{\"label\": \"entailed\"}"),
                    Behaviour::Huge => {
                        let _ = s.write_all(head(None).as_bytes()).await;
                        let chunk = vec![b'x'; 64 * 1024];
                        for _ in 0..160 {
                            if s.write_all(&chunk).await.is_err() {
                                return;
                            }
                        }
                        return;
                    }
                };
                let _ = s.write_all(head(Some(body.len())).as_bytes()).await;
                let _ = s.write_all(body.as_bytes()).await;
            });
        }
    });
    format!("http://{addr}/v1")
}

/// A URL where nothing listens.
pub(crate) async fn dead() -> String {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    drop(l);
    format!("http://{addr}/v1")
}
