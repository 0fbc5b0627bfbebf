//! The target `websocket_messages`: a Responses WebSocket's messages, one a line, read as a
//! socket reads them (SPEC R14.1b), each answer checked against a model of the rule written
//! again here: a run's body is the message with the last response's items before its own when it
//! continues that response, always streamed, within the body cap; a warm-up is kept within the
//! body and shape caps; anything else is refused or needs nothing.

use serde_json::{Map, Value, json};
use switchyard_gateway::fuzzing::{SocketChain, SocketRead};
use switchyard_gateway::ingress::shape;

/// The body cap of the socket under test: small, so conversations reach it.
const LIMIT: usize = 8 * 1024;

/// The last response as the model keeps it: its id and its whole conversation's items.
type Last = Option<(String, Vec<Value>)>;

pub fn check(data: &[u8]) {
    let mut chain = SocketChain::new(LIMIT);
    let mut last: Last = None;
    for (turn, line) in data.split(|b| *b == b'\n').enumerate() {
        // The session refuses a message past the shape caps before the chain reads it.
        if shape(line).is_err() {
            continue;
        }
        let read = chain.read(line);
        match parse_create(line) {
            Ok(Some(create)) => {
                let (body, items) = expected(create, &last);
                check_create(&mut chain, read, (&body, items), (&mut last, turn));
            }
            Ok(None) => assert!(matches!(read, SocketRead::Nothing), "{read:?}"),
            Err(()) => assert!(refused(&read, 400), "{read:?}"),
        }
    }
}

/// The message as a `response.create` object; `None` for a `response.processed`; `Err` for
/// anything the socket must refuse.
fn parse_create(line: &[u8]) -> Result<Option<Map<String, Value>>, ()> {
    let Ok(Value::Object(create)) = serde_json::from_slice::<Value>(line) else {
        return Err(());
    };
    match create.get("type").and_then(Value::as_str) {
        Some("response.create") => Ok(Some(create)),
        Some("response.processed") => Ok(None),
        _ => Err(()),
    }
}

/// The body the rule makes of `create` after `last`, and its items.
fn expected(mut create: Map<String, Value>, last: &Last) -> (Map<String, Value>, Vec<Value>) {
    create.remove("type");
    let own = match create.remove("input") {
        Some(Value::Array(items)) => items,
        Some(Value::String(text)) => {
            vec![json!({"type": "message", "role": "user", "content": text})]
        }
        _ => Vec::new(),
    };
    let previous = create.get("previous_response_id").and_then(Value::as_str);
    let mut items = Vec::new();
    if let Some((id, kept)) = last
        && previous == Some(id.as_str())
    {
        create.remove("previous_response_id");
        items.extend(kept.iter().cloned());
    }
    items.extend(own);
    create.insert("stream".to_owned(), Value::Bool(true));
    create.insert("input".to_owned(), Value::Array(items.clone()));
    (create, items)
}

/// Checks what the socket did with a `response.create` whose body the rule makes `body`, and
/// moves the model's last response as the socket's moved.
fn check_create(
    chain: &mut SocketChain,
    read: SocketRead,
    (body, items): (&Map<String, Value>, Vec<Value>),
    (last, turn): (&mut Last, usize),
) {
    let warm_up = body.get("generate").and_then(Value::as_bool) == Some(false);
    let mut body = body.clone();
    body.remove("generate");
    let text = serde_json::to_vec(&body).expect("a map serialises");
    let too_large = text.len() > LIMIT;
    // A run past the shape caps is refused by the pipeline it goes to; a warm-up by the socket.
    let misshapen = warm_up && !too_large && shape(&text).is_err();
    match read {
        SocketRead::Run(sent) => {
            assert!(!warm_up && !too_large, "ran {body:?}");
            assert_eq!(sent.len(), text.len(), "the body's length");
            let sent: Value = serde_json::from_slice(&sent).expect("a run's body is JSON");
            assert_eq!(sent, Value::Object(body), "the body run");
            let id = format!("resp_{turn}");
            let output = json!({"type": "message", "role": "assistant",
                "content": [{"type": "output_text", "text": turn.to_string()}]});
            chain.saw(&json!({"type": "response.completed",
                "response": {"id": id, "output": [output]}}));
            let mut kept = items;
            kept.push(output);
            *last = Some((id, kept));
        }
        SocketRead::Answer(events) => {
            assert!(warm_up && !too_large && !misshapen, "warmed up {body:?}");
            let id = events.get(1).and_then(|e| e["response"]["id"].as_str());
            let id = id.expect("a warm-up's second event names its response");
            *last = Some((id.to_owned(), items));
        }
        SocketRead::Refuse(event) => {
            let status = if too_large { 413 } else { 400 };
            assert!(too_large || misshapen, "refused {body:?}: {event}");
            assert_eq!(event["status"], status, "{event}");
        }
        SocketRead::Nothing => panic!("a response.create needed nothing"),
    }
}

fn refused(read: &SocketRead, status: u16) -> bool {
    matches!(read, SocketRead::Refuse(event) if event["status"] == status)
}
