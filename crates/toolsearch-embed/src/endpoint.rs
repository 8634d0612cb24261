//! An OpenAI-compatible `/v1/embeddings` endpoint (OpenAI, Ollama, TEI, vLLM, LM Studio …).

use parking_lot::Mutex;
use std::fmt;
use std::sync::mpsc;
use std::time::Duration;

use serde::Deserialize;
use toolsearch::search::{EmbedError, Embedder};

use crate::LoadError;

type Reply = mpsc::Sender<Result<Vec<Vec<f32>>, EmbedError>>;

/// Embeds through an OpenAI-compatible HTTP endpoint.
///
/// Requests run on a thread of the embedder's own (a one-thread Tokio runtime), so
/// [`Embedder::embed`] can block any caller, inside an async runtime or not. The API key is
/// kept out of `Debug`, logs and errors.
pub struct EndpointEmbedder {
    url: String,
    model: String,
    id: String,
    dim: usize,
    jobs: Mutex<mpsc::Sender<(Vec<String>, Reply)>>,
}

impl fmt::Debug for EndpointEmbedder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EndpointEmbedder")
            .field("url", &self.url)
            .field("model", &self.model)
            .field("dim", &self.dim)
            .finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
struct Response {
    data: Vec<Datum>,
}

#[derive(Deserialize)]
struct Datum {
    embedding: Vec<f32>,
    #[serde(default)]
    index: Option<usize>,
}

impl EndpointEmbedder {
    /// Connects to `url` (the full `…/v1/embeddings` address) for `model`, sending `api_key`
    /// as a bearer token when given. Embeds one probe text to learn the dimension, so a wrong
    /// address or model fails here rather than at the first search.
    pub fn connect(
        url: impl Into<String>,
        model: impl Into<String>,
        api_key: Option<String>,
        timeout: Duration,
    ) -> Result<Self, LoadError> {
        let url = url.into();
        let model = model.into();
        let (tx, rx) = mpsc::channel::<(Vec<String>, Reply)>();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| LoadError::new(format!("embedding endpoint runtime: {e}")))?;
        crate::install_crypto_provider();
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .build()
            .map_err(|e| LoadError::new(format!("embedding endpoint client: {e}")))?;
        let (u, m) = (url.clone(), model.clone());
        std::thread::Builder::new()
            .name("toolsearch-embed-http".into())
            .spawn(move || {
                for (texts, reply) in rx {
                    let out = runtime.block_on(request(&client, &u, &m, api_key.as_deref(), texts));
                    let _ = reply.send(out);
                }
            })
            .map_err(|e| LoadError::new(format!("embedding endpoint thread: {e}")))?;
        let mut me = Self {
            id: format!("endpoint:{model}@{url}"),
            url,
            model,
            dim: 0,
            jobs: Mutex::new(tx),
        };
        let probe = me
            .call(vec!["dimension probe".to_owned()])
            .map_err(|e| LoadError::new(e.0))?;
        me.dim = probe.first().map_or(0, Vec::len);
        if me.dim == 0 {
            return Err(LoadError::new(format!(
                "embedding endpoint {} returned an empty vector for model {:?}",
                me.url, me.model
            )));
        }
        Ok(me)
    }

    fn call(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, EmbedError> {
        let (reply, answer) = mpsc::channel();
        self.jobs
            .lock()
            .send((texts, reply))
            .map_err(|_| EmbedError("embedding endpoint thread has stopped".into()))?;
        answer
            .recv()
            .map_err(|_| EmbedError("embedding endpoint thread has stopped".into()))?
    }
}

async fn request(
    client: &reqwest::Client,
    url: &str,
    model: &str,
    key: Option<&str>,
    texts: Vec<String>,
) -> Result<Vec<Vec<f32>>, EmbedError> {
    let n = texts.len();
    let body = serde_json::json!({ "model": model, "input": texts });
    let mut req = client
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_string());
    if let Some(key) = key {
        req = req.header("authorization", format!("Bearer {key}"));
    }
    let fail = |why: String| EmbedError(format!("embedding endpoint {url}: {why}"));
    let resp = req
        .send()
        .await
        .map_err(|e| fail(without_url(&e.to_string())))?;
    let status = resp.status();
    let bytes = resp
        .bytes()
        .await
        .map_err(|e| fail(without_url(&e.to_string())))?;
    if !status.is_success() {
        let text = String::from_utf8_lossy(&bytes);
        let text: String = text.chars().take(200).collect();
        return Err(fail(format!("HTTP {status}: {text}")));
    }
    let parsed: Response = serde_json::from_slice(&bytes)
        .map_err(|e| fail(format!("not an embeddings response: {e}")))?;
    if parsed.data.len() != n {
        return Err(fail(format!("{} vectors for {n} texts", parsed.data.len())));
    }
    let mut out = vec![Vec::new(); n];
    for (i, d) in parsed.data.into_iter().enumerate() {
        let at = d.index.unwrap_or(i);
        if at >= n || !out[at].is_empty() {
            return Err(fail(format!("bad vector index {at}")));
        }
        if d.embedding.iter().any(|x| !x.is_finite()) {
            return Err(fail("a vector holds a non-finite value".into()));
        }
        out[at] = d.embedding;
    }
    Ok(out)
}

/// reqwest errors repeat the URL; the caller already names it.
fn without_url(s: &str) -> String {
    s.split(" for url (").next().unwrap_or(s).to_owned()
}

impl Embedder for EndpointEmbedder {
    fn model_id(&self) -> &str {
        &self.id
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let out = self.call(texts.iter().map(|t| (*t).to_owned()).collect())?;
        if let Some(bad) = out.iter().find(|v| v.len() != self.dim) {
            return Err(EmbedError(format!(
                "embedding endpoint {}: a {}-dimensional vector where {} were expected",
                self.url,
                bad.len(),
                self.dim
            )));
        }
        Ok(out)
    }

    fn batch_size(&self) -> usize {
        64
    }
}
