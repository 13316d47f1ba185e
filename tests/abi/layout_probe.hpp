// Every public struct of the ABI, and every member with its offset, as the
// compiler lays them out now. tests/abi/test_layout.cpp compares this list
// with the checked-in table tests/abi/layout.table.
#pragma once

#include <kvblob/kvblob.h>

#include <cstddef>
#include <string>
#include <vector>

struct LayoutEntry {
    std::string type;
    std::string member;  // "sizeof" for the struct's own size
    size_t value;
};

#define KVB_SIZE(T) LayoutEntry{#T, "sizeof", sizeof(T)}
#define KVB_OFF(T, M) LayoutEntry{#T, #M, offsetof(T, M)}

inline std::vector<LayoutEntry> current_layout()
{
    return {
        KVB_SIZE(kvblob_region_desc_t), KVB_OFF(kvblob_region_desc_t, struct_size),
        KVB_OFF(kvblob_region_desc_t, kind), KVB_OFF(kvblob_region_desc_t, base),
        KVB_OFF(kvblob_region_desc_t, size), KVB_OFF(kvblob_region_desc_t, device_ordinal),
        KVB_OFF(kvblob_region_desc_t, reserved),

        KVB_SIZE(kvblob_span_t), KVB_OFF(kvblob_span_t, struct_size), KVB_OFF(kvblob_span_t, reserved),
        KVB_OFF(kvblob_span_t, region), KVB_OFF(kvblob_span_t, offset), KVB_OFF(kvblob_span_t, length),

        KVB_SIZE(kvblob_row_t), KVB_OFF(kvblob_row_t, struct_size), KVB_OFF(kvblob_row_t, span_count),
        KVB_OFF(kvblob_row_t, key), KVB_OFF(kvblob_row_t, key_len), KVB_OFF(kvblob_row_t, spans),

        KVB_SIZE(kvblob_hint_t), KVB_OFF(kvblob_hint_t, struct_size), KVB_OFF(kvblob_hint_t, reserved),
        KVB_OFF(kvblob_hint_t, bytes), KVB_OFF(kvblob_hint_t, size),

        KVB_SIZE(kvblob_batch_t), KVB_OFF(kvblob_batch_t, struct_size), KVB_OFF(kvblob_batch_t, reserved),
        KVB_OFF(kvblob_batch_t, rows), KVB_OFF(kvblob_batch_t, row_count), KVB_OFF(kvblob_batch_t, hint),

        KVB_SIZE(kvblob_row_status_t), KVB_OFF(kvblob_row_status_t, struct_size),
        KVB_OFF(kvblob_row_status_t, result), KVB_OFF(kvblob_row_status_t, driver_code),
        KVB_OFF(kvblob_row_status_t, reserved),

        KVB_SIZE(kvblob_caps_t), KVB_OFF(kvblob_caps_t, struct_size), KVB_OFF(kvblob_caps_t, reserved),
        KVB_OFF(kvblob_caps_t, flags), KVB_OFF(kvblob_caps_t, max_rows_per_op),
        KVB_OFF(kvblob_caps_t, max_spans_per_row), KVB_OFF(kvblob_caps_t, max_key_bytes),
        KVB_OFF(kvblob_caps_t, max_object_bytes), KVB_OFF(kvblob_caps_t, max_ops_in_flight),
        KVB_OFF(kvblob_caps_t, access_end_bound_ns),

        KVB_SIZE(kvblob_option_t), KVB_OFF(kvblob_option_t, struct_size), KVB_OFF(kvblob_option_t, reserved),
        KVB_OFF(kvblob_option_t, key), KVB_OFF(kvblob_option_t, value),

        KVB_SIZE(kvblob_option_desc_t), KVB_OFF(kvblob_option_desc_t, struct_size),
        KVB_OFF(kvblob_option_desc_t, type), KVB_OFF(kvblob_option_desc_t, name),
        KVB_OFF(kvblob_option_desc_t, default_value), KVB_OFF(kvblob_option_desc_t, choices),
        KVB_OFF(kvblob_option_desc_t, help),

        KVB_SIZE(kvblob_host_services_t), KVB_OFF(kvblob_host_services_t, struct_size),
        KVB_OFF(kvblob_host_services_t, reserved), KVB_OFF(kvblob_host_services_t, context),
        KVB_OFF(kvblob_host_services_t, log), KVB_OFF(kvblob_host_services_t, notify),

        KVB_SIZE(kvblob_open_args_t), KVB_OFF(kvblob_open_args_t, struct_size),
        KVB_OFF(kvblob_open_args_t, abi_version), KVB_OFF(kvblob_open_args_t, options),
        KVB_OFF(kvblob_open_args_t, option_count), KVB_OFF(kvblob_open_args_t, host),

        KVB_SIZE(kvblob_plugin_t), KVB_OFF(kvblob_plugin_t, struct_size), KVB_OFF(kvblob_plugin_t, abi_version),
        KVB_OFF(kvblob_plugin_t, contract_version), KVB_OFF(kvblob_plugin_t, reserved),
        KVB_OFF(kvblob_plugin_t, name), KVB_OFF(kvblob_plugin_t, version),
        KVB_OFF(kvblob_plugin_t, description), KVB_OFF(kvblob_plugin_t, options),
        KVB_OFF(kvblob_plugin_t, option_count), KVB_OFF(kvblob_plugin_t, open), KVB_OFF(kvblob_plugin_t, close),
        KVB_OFF(kvblob_plugin_t, get_extension), KVB_OFF(kvblob_plugin_t, register_region),
        KVB_OFF(kvblob_plugin_t, unregister_region), KVB_OFF(kvblob_plugin_t, put), KVB_OFF(kvblob_plugin_t, get),
        KVB_OFF(kvblob_plugin_t, probe), KVB_OFF(kvblob_plugin_t, remove), KVB_OFF(kvblob_plugin_t, poll),
        KVB_OFF(kvblob_plugin_t, results), KVB_OFF(kvblob_plugin_t, row_message), KVB_OFF(kvblob_plugin_t, access),
        KVB_OFF(kvblob_plugin_t, cancel), KVB_OFF(kvblob_plugin_t, release), KVB_OFF(kvblob_plugin_t, drain),
        KVB_OFF(kvblob_plugin_t, option_flags),

        KVB_SIZE(kvblob_negotiation_t), KVB_OFF(kvblob_negotiation_t, struct_size),
        KVB_OFF(kvblob_negotiation_t, host_min_abi_version), KVB_OFF(kvblob_negotiation_t, host_max_abi_version),
        KVB_OFF(kvblob_negotiation_t, chosen_abi_version), KVB_OFF(kvblob_negotiation_t, plugin),
        KVB_OFF(kvblob_negotiation_t, host_kvblob_version), KVB_OFF(kvblob_negotiation_t, reserved),

        KVB_SIZE(kvblob_scenarios_t), KVB_OFF(kvblob_scenarios_t, struct_size),
        KVB_OFF(kvblob_scenarios_t, reserved), KVB_OFF(kvblob_scenarios_t, stage_foreign_writer),
        KVB_OFF(kvblob_scenarios_t, stage_full_pool), KVB_OFF(kvblob_scenarios_t, stage_failing_read),
        KVB_OFF(kvblob_scenarios_t, stage_held_get), KVB_OFF(kvblob_scenarios_t, stage_corrupt),
        KVB_OFF(kvblob_scenarios_t, stage_unprovable), KVB_OFF(kvblob_scenarios_t, release_staged),
        KVB_OFF(kvblob_scenarios_t, advance), KVB_OFF(kvblob_scenarios_t, echo_hint),
    };
}
