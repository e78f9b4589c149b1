/*
 * settings: what the HTTP layer needs to know from its operator: where to listen, how large a
 * request body may be, which browser origins may call /mcp and when MCP links to an image
 * instead of inlining it. server_start borrows one server_settings for its lifetime and reads
 * it only. Where the values come from is the daemon's business (daemon/config.c).
 */
#ifndef RB_SERVER_SETTINGS_H
#define RB_SERVER_SETTINGS_H

#include <stddef.h>

#define RB_DEFAULT_LISTEN "127.0.0.1:8080"
#define RB_DEFAULT_MAX_BODY (1024 * 1024)
#define RB_DEFAULT_MCP_IMAGE_LIMIT (1024 * 1024)
#define RB_DEFAULT_SERVER_MAX_UPLOAD (64 * 1024 * 1024)
#define RB_DEFAULT_MAX_STREAMS 64
#define RB_DEFAULT_MAX_CONNECTIONS 256
#define RB_DEFAULT_MAX_STREAM_MEMORY (256 * 1024 * 1024)
#define RB_DEFAULT_DIFY_TIMEOUT_S 15.0

/* Field comments name the daemon's flag and environment variable that set each one. */
typedef struct server_settings {
    char *listen;          /* "host:port"; --listen / RUNBOX_LISTEN */
    size_t max_body;       /* --max-body / RUNBOX_MAX_BODY: bytes of a JSON request body (413 beyond) */
    size_t max_upload;     /* bytes of an uploaded file's request body (413 beyond): the daemon passes core's
                              --max-upload here, so the two layers agree */
    char *allowed_origins; /* --allowed-origins / RUNBOX_ALLOWED_ORIGINS: comma-separated browser origins allowed
                              besides http(s)://localhost, 127.0.0.1 and [::1] (any port); NULL = none; "*" = any */
    char *allowed_hosts;   /* --allowed-hosts / RUNBOX_ALLOWED_HOSTS: comma-separated Host names served besides
                              localhost, 127.0.0.1, [::1] and the listen address; NULL = none; "*" = any */
    int max_streams;       /* --max-streams / RUNBOX_MAX_STREAMS: event streams (REST /events, MCP GET) open at
                              once; each may buffer up to 64 MiB for a slow client (429 beyond) */
    int max_connections;   /* --max-connections / RUNBOX_MAX_CONNECTIONS: client connections open at once; one more
                              gets 429 and is closed (each may buffer a request body up to max(max_body,
                              max_upload) before any handler runs) */
    size_t max_stream_memory; /* --max-stream-memory / RUNBOX_MAX_STREAM_MEMORY: bytes that event streams hold
                              together, unsent, for slow clients; a stream that would pass it ends */
    char *api_keys_file;   /* --api-keys-file / RUNBOX_API_KEYS_FILE: the API keys (server/auth.h); NULL = none:
                              then runboxd serves one trusted caller and listens on loopback only */
    int allow_unauthenticated; /* --allow-unauthenticated / RUNBOX_ALLOW_UNAUTHENTICATED: listen on another address
                              without API keys (anyone who reaches the port controls every session) */
    size_t mcp_image_limit;/* --mcp-image-limit / RUNBOX_MCP_IMAGE_LIMIT: PNG bytes above which MCP sends a
                              resource_link instead of inline image content */
    double dify_timeout;   /* --dify-timeout / RUNBOX_DIFY_TIMEOUT: seconds a Dify run (POST /v1/sandbox/run,
                              preload and code together) may take: dify-sandbox's WORKER_TIMEOUT */
} server_settings;

/** Fills s with the defaults above; the string fields are heap copies owned by s (or NULL). */
void server_settings_init(server_settings *s);
/** Frees the string fields and sets them to NULL. Accepts NULL. */
void server_settings_dispose(server_settings *s);

#endif
