# check_layers.cmake: the arrows between folders, checked on every build (cmake -P, run by the
# `layers` target that every library depends on). Each rule names a folder (its files, and those
# of its sub-folders unless a later rule names the sub-folder) and the project include prefixes
# its files may use; any other "folder/..." include fails the build, naming file, line and rule.
# Arrows point down: daemon -> server -> core -> store, docker -> base; inside core, a concern's
# folder (core/backend) includes nothing of the session manager's heart; inside server, one
# protocol family does not reach into another's private header, and no protocol sees core's
# internals (core/internal.h) or the engines' clients. server/dify, a translation of Dify's API
# and nothing else, sees only the HTTP layer's public header and core's.
#
#   cmake -DROOT=<source dir> -DSTAMP=<file written on success> -P check_layers.cmake
cmake_minimum_required(VERSION 3.18)

# folder|allowed,... (an entry ending in '/' is a folder prefix; otherwise an exact header)
set(RULES
    "base|base/"
    "store|base/,store/"
    "docker|base/,docker/"
    "core/backend|base/,docker/,core/backend/"
    "core/files|base/,core/files/,core/heart.h,core/core.h,core/settings.h,core/volumes/volumes.h,core/audit/audit.h"
    "core/web|base/,core/web/,core/heart.h,core/core.h,core/settings.h,core/deps/oneshot.h"
    "core/deps|base/,core/deps/,core/heart.h,core/core.h,core/settings.h,core/audit/audit.h"
    "core/policy|base/,core/policy/,core/settings.h"
    "core/network|base/,core/network/,core/heart.h,core/core.h,core/settings.h,core/deps/oneshot.h,core/audit/audit.h"
    "core/audit|base/,core/audit/,core/heart.h,core/core.h,core/settings.h,store/store.h"
    "core/isolation|base/,core/isolation/,core/core.h,core/heart.h"
    "core/workspace|base/,core/workspace/,core/heart.h,core/core.h,core/settings.h,core/deps/oneshot.h"
    "core/shares|base/,core/shares/,core/heart.h,core/core.h,core/settings.h"
    "core/usage|base/,core/usage/,core/heart.h,core/core.h,core/settings.h"
    "core/volumes|base/,core/volumes/,core/heart.h,core/core.h,core/settings.h,core/deps/oneshot.h,core/shares/sharespec.h,store/store.h"
    "core|base/,store/,core/"
    "server/dify|base/,server/dify/,server/http.h,server/settings.h,core/core.h,core/settings.h"
    "server|base/,server/,core/core.h,core/kernel_ask.h,core/mcp_sessions.h,core/process.h,core/deps/requirements.h,core/settings.h,core/stats.h,core/web/web_wire.h"
    "daemon|base/,server/,daemon/,core/")
# Private headers of a folder: only files of that folder may include them.
set(PRIVATE_HEADERS
    "core/internal.h|core/"
    "core/files/file_helper.h|core/files/"
    "core/network/egress_internal.h|core/network/"
    "core/deps/deps_internal.h|core/deps/"
    "core/volumes/volumes_internal.h|core/volumes/"
    "core/sandbox_private.h|core/sandbox"
    "core/backend/docker_private.h|core/backend/docker"
    "core/backend/multi_private.h|core/backend/multi"
    "docker/docker_private.h|docker/"
    "store/store_private.h|store/"
    "server/http_private.h|server/"
    "server/mcp/mcp_internal.h|server/mcp/"
    "server/e2b/e2b_internal.h|server/e2b/"
    "server/jupyter/jupyter_internal.h|server/jupyter/"
    "server/agentrun/agentrun_internal.h|server/agentrun/")

set(folders "")
foreach(rule ${RULES})
    string(REPLACE "|" ";" parts "${rule}")
    list(GET parts 0 folder)
    list(APPEND folders "${folder}")
endforeach()

set(failures "")
foreach(rule ${RULES})
    string(REPLACE "|" ";" parts "${rule}")
    list(GET parts 0 folder)
    list(GET parts 1 allowed)
    string(REPLACE "," ";" allowed "${allowed}")
    file(GLOB_RECURSE files RELATIVE "${ROOT}" "${ROOT}/${folder}/*.c" "${ROOT}/${folder}/*.h")
    foreach(f ${files})
        # a file belongs to the deepest folder a rule names
        set(owner "")
        foreach(other ${folders})
            string(LENGTH "${other}" olen)
            string(LENGTH "${owner}" blen)
            if(f MATCHES "^${other}/" AND olen GREATER blen)
                set(owner "${other}")
            endif()
        endforeach()
        if(NOT owner STREQUAL folder)
            continue()
        endif()
        file(STRINGS "${ROOT}/${f}" lines REGEX "^[ \t]*#[ \t]*include[ \t]+\"[a-z_]+/")
        foreach(line ${lines})
            string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]+\"([^\"]+)\".*" "\\1" inc "${line}")
            set(ok FALSE)
            foreach(a ${allowed})
                if(a MATCHES "/$")
                    string(FIND "${inc}" "${a}" at)
                    if(at EQUAL 0)
                        set(ok TRUE)
                    endif()
                elseif(inc STREQUAL a)
                    set(ok TRUE)
                endif()
            endforeach()
            foreach(p ${PRIVATE_HEADERS})
                string(REPLACE "|" ";" pp "${p}")
                list(GET pp 0 header)
                list(GET pp 1 users)
                string(FIND "${f}" "${users}" at)
                if(inc STREQUAL header AND NOT at EQUAL 0)
                    set(ok FALSE)
                endif()
            endforeach()
            if(NOT ok)
                string(APPEND failures "\n  ${f}: #include \"${inc}\" (files of ${folder}/ may include: ${allowed}; private headers stay in their folder)")
            endif()
        endforeach()
    endforeach()
endforeach()

if(failures)
    message(FATAL_ERROR "an include points where the layers forbid (cmake/check_layers.cmake):${failures}")
endif()
file(WRITE "${STAMP}" "ok\n")
