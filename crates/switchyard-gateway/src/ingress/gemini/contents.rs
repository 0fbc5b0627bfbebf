//! Gemini's `contents[]` and `systemInstruction` as Switchyard's messages and system prompt:
//! text, thoughts, inline images, function calls and their responses, paired by id or else by
//! name.
//! Spec: R14.12, R14.2.

use std::collections::HashSet;

use serde_json::Value;
use switchyard_api::message::ImageSource;
use switchyard_api::{ContentBlock, Message, Role};

use super::super::fields::{
    Object, as_object, element, get, member, note_dropped, opt_array, opt_bool, opt_object,
    opt_str, req_str, wrong_kind,
};
use super::super::request::IngressError;

/// The conversation of `contents`, at `path`, oldest first. A content left with no part to
/// send is left out, as a model turn of thoughts alone is.
pub(super) fn messages(
    contents: &[Value],
    path: &str,
    dropped: &mut Vec<String>,
) -> Result<Vec<Message>, IngressError> {
    let mut reader = Reader {
        open: Vec::new(),
        taken: ids_sent(contents),
        dropped,
    };
    let mut out = Vec::new();
    for (i, content) in contents.iter().enumerate() {
        let at = element(path, i);
        let content = as_object(content, &at)?;
        let role = match opt_str(content, "role", &at)? {
            // Older SDKs sent function responses in turns of role `function`.
            None | Some("" | "user" | "function") => Role::User,
            Some("model") => Role::Assistant,
            Some(other) => {
                return Err(IngressError::new(
                    member(&at, "role"),
                    format!("`{other}` is not one of user, model."),
                ));
            }
        };
        let parts_at = member(&at, "parts");
        let mut blocks = Vec::new();
        let parts = opt_array(content, "parts", &at)?;
        for (j, part) in parts.into_iter().flatten().enumerate() {
            let at = element(&parts_at, j);
            reader.part(as_object(part, &at)?, &at, (i, j), &mut blocks)?;
        }
        if !blocks.is_empty() {
            out.push(Message {
                role,
                content: blocks,
            });
        }
    }
    Ok(out)
}

/// The system prompt of `systemInstruction`: its text parts joined by blank lines.
pub(super) fn system(
    system: &Value,
    at: &str,
    dropped: &mut Vec<String>,
) -> Result<String, IngressError> {
    if let Value::String(text) = system {
        return Ok(text.clone());
    }
    let obj = as_object(system, at)?;
    let mut texts = Vec::new();
    for (i, part) in opt_array(obj, "parts", at)?
        .into_iter()
        .flatten()
        .enumerate()
    {
        let at = element(&member(at, "parts"), i);
        let part = as_object(part, &at)?;
        match opt_str(part, "text", &at)? {
            Some(text) if !text.is_empty() => texts.push(text),
            Some(_) => {}
            None => note_dropped(dropped, "systemInstruction.parts"),
        }
    }
    Ok(texts.join("\n\n"))
}

/// The ids the client gave its calls and responses, which no id made up may take.
fn ids_sent(contents: &[Value]) -> HashSet<String> {
    let parts = (contents.iter())
        .filter_map(|c| c.get("parts")?.as_array())
        .flatten();
    parts
        .filter_map(|p| {
            let part = p
                .get("functionCall")
                .or_else(|| p.get("functionResponse"))?;
            part.get("id")?.as_str().map(str::to_owned)
        })
        .collect()
}

/// Reads parts, keeping the calls not yet answered to pair each response with its call.
struct Reader<'d> {
    /// Calls not yet answered: id and name, in order.
    open: Vec<(String, String)>,
    /// Every id sent or made up so far.
    taken: HashSet<String>,
    dropped: &'d mut Vec<String>,
}

impl Reader<'_> {
    /// An id of the place of content `i`, part `j`, that nothing else has: the same for the same
    /// request every time.
    fn made_up(&mut self, (i, j): (usize, usize)) -> String {
        let mut id = format!("call_{i}_{j}");
        while self.taken.contains(&id) {
            id.push('_');
        }
        self.taken.insert(id.clone());
        id
    }

    /// One part of content `i`, part `j`, into `blocks`.
    fn part(
        &mut self,
        part: &Object,
        at: &str,
        (i, j): (usize, usize),
        blocks: &mut Vec<ContentBlock>,
    ) -> Result<(), IngressError> {
        let signature = opt_str(part, "thoughtSignature", at)?.filter(|s| !s.is_empty());
        if let Some(call) = opt_object(part, "functionCall", at)? {
            let block = self.call(call, &member(at, "functionCall"), signature, (i, j))?;
            blocks.push(block);
            return Ok(());
        }
        // A signature is Gemini's alone and signs the model's own turn; only a call's is kept.
        if signature.is_some() {
            note_dropped(self.dropped, "thoughtSignature");
        }
        if let Some(text) = opt_str(part, "text", at)? {
            if !text.is_empty() {
                blocks.push(match opt_bool(part, "thought", at)? {
                    Some(true) => ContentBlock::Thinking {
                        thinking: text.to_owned(),
                        signature: String::new(),
                    },
                    _ => ContentBlock::Text {
                        text: text.to_owned(),
                    },
                });
            }
        } else if let Some(data) = opt_object(part, "inlineData", at)? {
            blocks.extend(self.inline(data, &member(at, "inlineData"))?);
        } else if let Some(response) = opt_object(part, "functionResponse", at)? {
            let at = member(at, "functionResponse");
            blocks.extend(self.response(response, &at, (i, j))?);
        }
        for name in [
            "fileData",
            "executableCode",
            "codeExecutionResult",
            "videoMetadata",
        ] {
            if get(part, name).is_some() {
                note_dropped(self.dropped, name);
            }
        }
        Ok(())
    }

    /// An inline image; other inline data, a PDF or audio say, is named dropped.
    fn inline(&mut self, data: &Object, at: &str) -> Result<Option<ContentBlock>, IngressError> {
        let mime = req_str(data, "mimeType", at)?.trim().to_ascii_lowercase();
        let bytes = req_str(data, "data", at)?.trim();
        if bytes.is_empty() {
            return Err(IngressError::new(member(at, "data"), "holds no data."));
        }
        if !mime.starts_with("image/") {
            note_dropped(self.dropped, "inlineData");
            return Ok(None);
        }
        Ok(Some(ContentBlock::Image {
            source: ImageSource {
                kind: "base64".to_owned(),
                media_type: mime,
                data: bytes.to_owned(),
            },
        }))
    }

    /// A `functionCall`: its arguments must be an object. A call without an id gets one of its
    /// place, `call_I_J`, which its response finds by name.
    fn call(
        &mut self,
        call: &Object,
        at: &str,
        signature: Option<&str>,
        (i, j): (usize, usize),
    ) -> Result<ContentBlock, IngressError> {
        let name = req_str(call, "name", at)?.to_owned();
        let input = match get(call, "args") {
            None => Value::Object(Object::new()),
            Some(args @ Value::Object(_)) => args.clone(),
            Some(other) => {
                return Err(wrong_kind(&member(at, "args"), "an object", other));
            }
        };
        let id = match opt_str(call, "id", at)? {
            Some(id) if !id.is_empty() => id.to_owned(),
            _ => self.made_up((i, j)),
        };
        self.open.push((id.clone(), name.clone()));
        Ok(ContentBlock::ToolUse {
            id,
            name,
            input,
            signature: signature.map(str::to_owned),
        })
    }

    /// A `functionResponse` as a tool result, and the images of its `parts` after it.
    fn response(
        &mut self,
        response: &Object,
        at: &str,
        (i, j): (usize, usize),
    ) -> Result<Vec<ContentBlock>, IngressError> {
        let name = opt_str(response, "name", at)?.unwrap_or_default();
        let own = opt_str(response, "id", at)?.filter(|id| !id.is_empty());
        let tool_use_id = self.answer(own, name, (i, j));
        let (content, is_error) = result_text(get(response, "response"));
        let mut blocks = vec![ContentBlock::ToolResult {
            tool_use_id,
            content,
            is_error,
        }];
        let parts_at = member(at, "parts");
        for (k, part) in opt_array(response, "parts", at)?
            .into_iter()
            .flatten()
            .enumerate()
        {
            let at = element(&parts_at, k);
            let part = as_object(part, &at)?;
            match opt_object(part, "inlineData", &at)? {
                Some(data) => blocks.extend(self.inline(data, &member(&at, "inlineData"))?),
                None => note_dropped(self.dropped, "functionResponse.parts"),
            }
        }
        if get(response, "willContinue").is_some() || get(response, "scheduling").is_some() {
            note_dropped(self.dropped, "functionResponse.scheduling");
        }
        Ok(blocks)
    }

    /// The id of the call a response answers: its own, else the first open call of its name's,
    /// else one of its place.
    fn answer(&mut self, own: Option<&str>, name: &str, (i, j): (usize, usize)) -> String {
        let at = match own {
            Some(id) => self.open.iter().position(|(open, _)| open == id),
            None => self.open.iter().position(|(_, n)| n == name),
        };
        let answered = at.map(|at| self.open.remove(at).0);
        match (own, answered) {
            (Some(id), _) => id.to_owned(),
            (None, Some(id)) => id,
            (None, None) => self.made_up((i, j)),
        }
    }
}

/// A response object as a tool result's text: a lone `output`, `content` or `error` string is
/// the text, anything else its JSON. It is an error when it has an `error`.
fn result_text(response: Option<&Value>) -> (String, bool) {
    let Some(response) = response else {
        return (String::new(), false);
    };
    let Value::Object(map) = response else {
        return match response {
            Value::String(text) => (text.clone(), false),
            other => (other.to_string(), false),
        };
    };
    let is_error = map.get("error").is_some_and(|e| !e.is_null());
    let mut fields = map.iter();
    match (fields.next(), fields.next()) {
        (Some((key, Value::String(text))), None)
            if matches!(key.as_str(), "output" | "content" | "result" | "error") =>
        {
            (text.clone(), is_error)
        }
        _ => (response.to_string(), is_error),
    }
}
