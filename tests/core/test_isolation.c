/* core/isolation: the names, a key's isolation= list, its default, the runtime of each and the
 * process limit of a gVisor sandbox. */
#include <criterion/criterion.h>
#include <string.h>

#include "core/isolation/isolation.h"

Test(isolation, names_and_runtimes)
{
    cr_assert(isolation_known("container") && isolation_known("gvisor"));
    cr_assert(!isolation_known(NULL) && !isolation_known("") && !isolation_known("kata") && !isolation_known("gVisor"));
    cr_assert_str_eq(isolation_runtime("container", "runsc"), "runc");
    cr_assert_str_eq(isolation_runtime("gvisor", "runsc-kvm"), "runsc-kvm");
}

Test(isolation, key_lists_are_checked)
{
    char err[RB_ERR_LEN];
    const char *good[] = {"*", "gvisor", "container", "container,gvisor", "gvisor,container"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        cr_assert_eq(isolation_key_check(good[i], err), RB_OK, "%s: %s", good[i], err);
    const char *bad[] = {"", ",", "gvisor,", ",gvisor", "kata", "gvisor,,container", "container gvisor", "**",
                         "gvisorcontainerxxxxxxxxxxxxxxxxxx"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        cr_assert_eq(isolation_key_check(bad[i], err), RB_EINVAL, "accepted '%s'", bad[i]);
        cr_assert(strstr(err, "isolation=") != NULL, "%s", err);
    }
    cr_assert_eq(isolation_key_check(NULL, err), RB_EINVAL);
}

Test(isolation, what_a_key_may_use_and_its_default)
{
    cr_assert(isolation_key_allows(NULL, "gvisor") && isolation_key_allows("", "container"));
    cr_assert(isolation_key_allows("*", "gvisor") && !isolation_key_allows("*", "kata"));
    cr_assert(isolation_key_allows("gvisor", "gvisor") && !isolation_key_allows("gvisor", "container"));
    cr_assert(isolation_key_allows("container,gvisor", "gvisor"));
    cr_assert(!isolation_key_allows("container", "gvisorx") && !isolation_key_allows("gvisor", "gvis"));
    cr_assert_str_eq(isolation_key_default(NULL, "container"), "container");
    cr_assert_str_eq(isolation_key_default("gvisor", "container"), "gvisor");
    cr_assert_str_eq(isolation_key_default("container", "gvisor"), "container");
    cr_assert_str_eq(isolation_key_default("container,gvisor", "gvisor"), "gvisor");
    cr_assert_str_eq(isolation_key_default("gvisor,container", "container"), "container");
}

Test(isolation, a_gvisor_sandbox_forks_at_most_one_process_per_8_mib)
{
    cr_assert_eq(isolation_gvisor_nproc(256, 512LL * 1024 * 1024), 64, "the default session");
    cr_assert_eq(isolation_gvisor_host_pids(64), 256 + 64 * 32);
    cr_assert_eq(isolation_gvisor_nproc(256, 1024LL * 1024 * 1024), 128);
    cr_assert_eq(isolation_gvisor_nproc(100, 4096LL * 1024 * 1024), 100);
    cr_assert_eq(isolation_gvisor_nproc(256, 64LL * 1024 * 1024), 16, "never below 16");
    cr_assert_eq(isolation_gvisor_nproc(64, 0), 64, "no memory limit: the pids limit");
}
