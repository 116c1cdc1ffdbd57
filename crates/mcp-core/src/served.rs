//! [`Served`]: an [`McpService`] as the stdio transport hands it to rmcp.
//!
//! rmcp routes each request and refuses some before they reach the service; `Served`
//! rewords those refusals the way the rest of the framework words them. (Over HTTP, rmcp's
//! server needs the service itself; the endpoint rewords its answer instead.)

use std::borrow::Cow;

use ferrymcp_types::{ClientRequest, ErrorCode, ErrorData, ProtocolVersion, ServerResult, codes};
use rmcp::{
    RoleServer, Service,
    service::{NotificationContext, RequestContext, ServiceRole},
};

use crate::McpService;

/// An [`McpService`] with rmcp's routing (its blanket `Service` impl) and our wording of the
/// refusals that routing makes itself: a `tasks/*` request without the tasks extension
/// declared gets the same `-32021` message as a task subscription.
#[derive(Clone)]
pub(crate) struct Served(pub(crate) McpService);

impl Service<RoleServer> for Served {
    async fn handle_request(
        &self,
        request: <RoleServer as ServiceRole>::PeerReq,
        context: RequestContext<RoleServer>,
    ) -> Result<ServerResult, ErrorData> {
        let tasks_request = matches!(
            request,
            ClientRequest::GetTaskRequest(_)
                | ClientRequest::UpdateTaskRequest(_)
                | ClientRequest::CancelTaskRequest(_)
        );
        let outcome = Service::handle_request(&self.0, request, context).await;
        match outcome {
            Err(error)
                if tasks_request && error.code == ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY =>
            {
                Err(codes::request_needs_tasks())
            }
            other => other,
        }
    }

    async fn handle_notification(
        &self,
        notification: <RoleServer as ServiceRole>::PeerNot,
        context: NotificationContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Service::handle_notification(&self.0, notification, context).await
    }

    fn get_info(&self) -> <RoleServer as ServiceRole>::Info {
        Service::get_info(&self.0)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Service::supported_protocol_versions(&self.0)
    }
}
