// Breaks of R-ROW-1 that only a wide operation shows: results kept in a
// table of 1024 rows, so that each row past it reads another row's result
// (or a page past it starts in the wrong place).
#include "hook.hpp"

#include <vector>

namespace kvblob::breaking {

namespace {

constexpr uint64_t table_rows = 1024;

template <class B>
std::unique_ptr<Break> make()
{
    return std::make_unique<B>();
}

// results.wide: results kept in a fixed table of entries entries, row r in
// entry r % entries, each written over by the rows after it: a row reads the
// result of the last row of its operation that shares its entry.
template <uint64_t entries>
struct FixedResultTable : Break {
    kvblob_status results(Hooked &h, kvblob_op_t *op, uint64_t first, uint64_t count,
                          kvblob_row_status_t *out) override
    {
        OpInfo info;
        if (!h.info(op, info) || info.rows <= entries || first > info.rows || count > info.rows - first)
            return h.results(op, first, count, out);
        std::vector<kvblob_row_status_t> all(info.rows);
        for (auto &r : all) r.struct_size = sizeof r;
        const kvblob_status st = h.results(op, 0, info.rows, all.data());
        if (st != KVBLOB_OK) return st;
        for (uint64_t i = 0; i < count; ++i) {
            const uint64_t entry = (first + i) % entries;
            out[i] = all[entry + entries * ((info.rows - 1 - entry) / entries)];
        }
        return KVBLOB_OK;
    }
};
const Registered fixed_table("results.wide", make<FixedResultTable<table_rows>>);
// m.row1.fixed-table-16384: the same table as wide as the rows results.wide
// puts, so that only an operation wider than any it puts shows it.
const Registered fixed_table_16384("m.row1.fixed-table-16384", make<FixedResultTable<16384>>);

// m.row1.page-past-first-block: results kept in blocks of 1024 rows, and a
// page that starts past the first block read from the first one.
struct PagePastFirstBlock : Break {
    kvblob_status results(Hooked &h, kvblob_op_t *op, uint64_t first, uint64_t count,
                          kvblob_row_status_t *out) override
    {
        const kvblob_status st = h.results(op, first, count, out);  // the bounds checked as asked
        return st == KVBLOB_OK && first >= table_rows ? h.results(op, first % table_rows, count, out) : st;
    }
};
const Registered page_past("m.row1.page-past-first-block", make<PagePastFirstBlock>);

}  // namespace

}  // namespace kvblob::breaking
