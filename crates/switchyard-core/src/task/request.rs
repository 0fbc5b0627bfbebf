//! Consuming one streamed request into events, usage and the assistant's message.
//! Spec: R8.2, R9.1, R9.2, R9.4.

use std::time::Duration;

use futures_util::StreamExt;
use switchyard_api::{
    ApiError, ApiHandler, ApiStream, ApiStreamChunk, ContentBlock, ErrorKind, Message, ToolCall,
    Usage,
};
use tokio::time::Instant;

use super::assembler::MessageAssembler;
use super::events::TaskEvent;
use super::observer::TurnObserver;
use crate::cost::UsageTotals;

/// How one request ended.
#[derive(Debug, Clone, PartialEq)]
pub enum RequestStatus {
    /// The stream ended normally with content.
    Completed,
    /// The request failed before or during the stream.
    Failed(ApiError),
}

#[derive(Debug, Clone)]
pub(crate) struct RequestOutcome {
    pub status: RequestStatus,
    /// The assistant's message, kept even when the stream failed part-way.
    pub assistant_message: Message,
    pub usage: UsageTotals,
    /// `None` when prices are unknown and the provider reported no cost.
    pub cost_usd: Option<f64>,
    pub first_token: Option<Duration>,
    /// From the request's start to the stream's end; the tests time requests with it.
    #[cfg_attr(not(test), allow(dead_code))]
    pub duration: Duration,
    /// Calls of a completed stream whose arguments are not one JSON object.
    pub rejected_tool_calls: Vec<RejectedToolCall>,
}

/// A tool call that was not handed over: the model is told, the user sees it, nothing runs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RejectedToolCall {
    pub call: ToolCall,
    /// Why it was rejected, such as "a JSON array instead of an object".
    pub reason: String,
}

fn estimate_tokens(bytes: usize) -> u64 {
    bytes.div_ceil(4) as u64
}

fn block_len(block: &ContentBlock) -> usize {
    match block {
        ContentBlock::Text { text } => text.len(),
        ContentBlock::Thinking { thinking, .. } => thinking.len(),
        ContentBlock::ToolUse { name, input, .. } => name.len() + input.to_string().len(),
        ContentBlock::ToolResult { content, .. } => content.len(),
        ContentBlock::Image { .. } | ContentBlock::RedactedThinking { .. } => 0,
    }
}

#[cfg(test)]
pub(crate) async fn run_request(
    handler: &dyn ApiHandler,
    system_prompt: &str,
    messages: &[Message],
    tools: &[switchyard_api::ToolSpec],
    options: switchyard_api::RequestOptions,
    observer: &mut dyn TurnObserver,
) -> RequestOutcome {
    let started = Instant::now();
    let stream = handler.create_message(system_prompt, messages, tools, options);
    let outcome = consume_stream(handler, stream, started, system_prompt, messages, observer).await;
    if let RequestStatus::Failed(e) = &outcome.status {
        observer.event(super::events::error_event(e)).await;
    }
    outcome
}

/// Consumes a probed stream, leaving the report of a failure to the caller.
pub(crate) async fn consume_stream(
    handler: &dyn ApiHandler,
    stream: ApiStream,
    started: Instant,
    system_prompt: &str,
    messages: &[Message],
    observer: &mut dyn TurnObserver,
) -> RequestOutcome {
    let model = handler.get_model();
    let read = read_stream(stream, started, observer).await;
    let mut failure = read.failure;
    let mut usage = read.usage;
    let (assistant_message, rejected_tool_calls) =
        finish_message(read.assembler, failure.is_none(), observer).await;
    if failure.is_none() && read.first_token.is_none() {
        failure = Some(
            ApiError::new(ErrorKind::Server, "the provider returned an empty response")
                .with_origin(handler.provider_id(), &model.id),
        );
    }
    if !usage.reported {
        if let Some(late) = handler.get_api_stream_usage().await {
            usage.add(&late);
        }
    }
    let estimated = !usage.reported && read.first_token.is_some() && failure.is_none();
    if estimated {
        // llama-cpp-python never reports usage; a failed stream's usage is unknown, not small.
        usage.add(&estimated_usage(
            system_prompt,
            messages,
            &assistant_message,
        ));
    }
    let cost_usd = if usage.reported {
        usage.cost_usd(&model.info, model.thinking_budget_tokens)
    } else {
        Some(0.0)
    };
    if usage.reported {
        observer
            .event(usage_event(&usage, cost_usd, estimated))
            .await;
    }
    RequestOutcome {
        status: failure.map_or(RequestStatus::Completed, RequestStatus::Failed),
        assistant_message,
        usage,
        cost_usd,
        first_token: read.first_token,
        duration: started.elapsed(),
        rejected_tool_calls,
    }
}

struct Read {
    usage: UsageTotals,
    assembler: MessageAssembler,
    first_token: Option<Duration>,
    failure: Option<ApiError>,
}

async fn read_stream(
    mut stream: ApiStream,
    started: Instant,
    observer: &mut dyn TurnObserver,
) -> Read {
    let mut read = Read {
        usage: UsageTotals::default(),
        assembler: MessageAssembler::default(),
        first_token: None,
        failure: None,
    };
    while let Some(item) = stream.next().await {
        let chunk = match item {
            Ok(c) => c,
            Err(e) => {
                read.failure = Some(e);
                break;
            }
        };
        if chunk.is_content() && read.first_token.is_none() {
            read.first_token = Some(started.elapsed());
        }
        read.assembler.push(&chunk);
        match chunk {
            ApiStreamChunk::Text { text, .. } => observer.event(TaskEvent::Text { text }).await,
            ApiStreamChunk::Reasoning { reasoning, .. } if !reasoning.is_empty() => {
                observer
                    .event(TaskEvent::Reasoning { text: reasoning })
                    .await;
            }
            ApiStreamChunk::Usage(u) => read.usage.add(&u),
            // A cut answer is kept as the answer.
            ApiStreamChunk::Reasoning { .. }
            | ApiStreamChunk::ToolCalls { .. }
            | ApiStreamChunk::Finish { .. }
            | ApiStreamChunk::Wire(_) => {}
        }
    }
    read
}

async fn finish_message(
    assembler: MessageAssembler,
    completed: bool,
    observer: &mut dyn TurnObserver,
) -> (Message, Vec<RejectedToolCall>) {
    if !completed {
        return (assembler.finish_partial(), Vec::new());
    }
    let (message, calls, rejected) = assembler.finish_checked();
    let rejected = rejected
        .into_iter()
        .map(|(call, reason)| RejectedToolCall { call, reason })
        .collect();
    for call in calls {
        observer
            .event(TaskEvent::ToolCall {
                id: call.id,
                name: call.name,
                arguments: call.arguments,
            })
            .await;
    }
    (message, rejected)
}

fn estimated_usage(system_prompt: &str, messages: &[Message], answer: &Message) -> Usage {
    let output_bytes: usize = answer.content.iter().map(block_len).sum();
    let input_bytes: usize = messages
        .iter()
        .flat_map(|m| &m.content)
        .map(block_len)
        .sum();
    Usage {
        input_tokens: estimate_tokens(system_prompt.len() + input_bytes),
        output_tokens: estimate_tokens(output_bytes),
        ..Usage::default()
    }
}

fn usage_event(usage: &UsageTotals, cost_usd: Option<f64>, estimated: bool) -> TaskEvent {
    TaskEvent::Usage {
        input_tokens: usage.input_tokens,
        output_tokens: usage.output_tokens,
        cache_read_tokens: usage.cache_read_tokens,
        cache_write_tokens: usage.cache_write_tokens,
        cost_usd,
        estimated,
    }
}
