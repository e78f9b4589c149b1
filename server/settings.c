/*
 * settings.c: defaults of the HTTP layer's settings (server/settings.h).
 */
#include "server/settings.h"

#include <stdlib.h>
#include <string.h>

#include "base/mem.h"

void server_settings_init(server_settings *s)
{
    memset(s, 0, sizeof(*s));
    s->listen = xstrdup(RB_DEFAULT_LISTEN);
    s->max_body = RB_DEFAULT_MAX_BODY;
    s->max_upload = RB_DEFAULT_SERVER_MAX_UPLOAD;
    s->allowed_origins = NULL;
    s->mcp_image_limit = RB_DEFAULT_MCP_IMAGE_LIMIT;
    s->max_streams = RB_DEFAULT_MAX_STREAMS;
    s->max_connections = RB_DEFAULT_MAX_CONNECTIONS;
    s->max_stream_memory = RB_DEFAULT_MAX_STREAM_MEMORY;
    s->dify_timeout = RB_DEFAULT_DIFY_TIMEOUT_S;
}

void server_settings_dispose(server_settings *s)
{
    if (s == NULL)
        return;
    free(s->listen);
    free(s->allowed_origins);
    free(s->allowed_hosts);
    free(s->api_keys_file);
    s->listen = s->allowed_origins = s->allowed_hosts = s->api_keys_file = NULL;
}
