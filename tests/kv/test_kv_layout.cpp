// KvLayout byte accounting against hand-computed figures for real models,
// and the block layout tiling every byte exactly once.
#include <QtTest>

#include <vector>

#include "engine/core/error.h"
#include "engine/kv/kv_layout.h"
#include "engine/kv/kv_memory_calc.h"
#include "engine/presets/device_presets.h"
#include "engine/presets/model_presets.h"

using namespace kvscope;

class TestKvLayout : public QObject {
    Q_OBJECT
private slots:
    void llama2_7b_bytes_per_token();
    void llama3_70b_bytes_per_token();
    void quantized_rows_include_scales();
    void fp8_scales_live_outside_blocks();
    void int4_groups_when_head_is_small();
    void kivi_blocks_and_tail();
    void kivi_int2_packs_four_per_byte();
    void block_regions_tile_every_byte_once_data();
    void block_regions_tile_every_byte_once();
    void rejects_bad_geometry();
    void preset_parameter_counts_match_published();
    void calculator_answers();
};

void TestKvLayout::llama2_7b_bytes_per_token() {
    // 32 layers x 32 KV heads x 128 x 2 (K and V) x 2 bytes = 512 KiB.
    const KvGeometry g{32, 32, 128};
    QCOMPARE(KvLayout(g, KvDtype::F16, 16).bytes_per_token(), std::size_t{512 * 1024});
    QCOMPARE(KvLayout(g, KvDtype::BF16, 16).bytes_per_token(), std::size_t{512 * 1024});
    QCOMPARE(KvLayout(g, KvDtype::F32, 16).bytes_per_token(), std::size_t{1024 * 1024});
    QCOMPARE(KvLayout(g, KvDtype::F16, 16).bytes_per_block(), std::size_t{8 * 1024 * 1024});
    QCOMPARE(KvLayout(g, KvDtype::F16, 32).bytes_per_block(), std::size_t{16 * 1024 * 1024});
}

void TestKvLayout::llama3_70b_bytes_per_token() {
    // 80 layers x 8 KV heads x 128 x 2 x 2 bytes = 320 KiB.
    QCOMPARE(KvLayout({80, 8, 128}, KvDtype::F16, 16).bytes_per_token(), std::size_t{320 * 1024});
}

void TestKvLayout::quantized_rows_include_scales() {
    const KvGeometry g{32, 32, 128};
    const std::size_t rows = 32 * 32 * 2; // layers x heads x {K,V}
    // int8: 128 bytes + one f16 scale per row.
    const KvLayout int8(g, KvDtype::Int8, 16);
    QCOMPARE(int8.bytes_per_token(), rows * (128 + 2));
    QCOMPARE(int8.scale_bytes_per_token(), rows * 2);
    // int4: 64 bytes + 4 groups x (f16 scale + f16 zero).
    const KvLayout int4(g, KvDtype::Int4, 16);
    QCOMPARE(int4.group_size(), 32u);
    QCOMPARE(int4.bytes_per_token(), rows * (64 + 4 * 4));
    QCOMPARE(int4.bytes_per_block(), rows * (64 + 16) * 16);
    QCOMPARE(int4.scale_bytes_per_block(), rows * 16 * 16);
}

void TestKvLayout::fp8_scales_live_outside_blocks() {
    const KvLayout fp8({32, 32, 128}, KvDtype::Fp8E4M3, 16);
    QCOMPARE(fp8.bytes_per_token(), std::size_t{32 * 32 * 2 * 128});
    QCOMPARE(fp8.scale_bytes_per_token(), std::size_t{0});
    QCOMPARE(fp8.fixed_bytes(), std::size_t{32 * 32 * 2 * 4}); // one f32 per layer, head, K/V
    QCOMPARE(KvLayout({32, 32, 128}, KvDtype::F16, 16).fixed_bytes(), std::size_t{0});
}

void TestKvLayout::int4_groups_when_head_is_small() {
    // head_dim 8 < 32: one group covering the whole head.
    const KvLayout small({5, 4, 8}, KvDtype::Int4, 16);
    QCOMPARE(small.group_size(), 8u);
    QCOMPARE(small.groups_per_row(), 1u);
    QCOMPARE(small.row_value_bytes() + small.v_row_scale_bytes(), std::size_t{4 + 4});
    // head_dim 80 = 32 + 32 + 16: three groups, the last one partial.
    const KvLayout odd({1, 1, 80}, KvDtype::Int4, 16);
    QCOMPARE(odd.groups_per_row(), 3u);
    QCOMPARE(odd.row_value_bytes() + odd.k_row_scale_bytes(), std::size_t{40 + 12});
}

void TestKvLayout::kivi_blocks_and_tail() {
    // Llama-2-7B shape, int4-kivi, blocks of 16. Per layer, head and block:
    //   K codes  16 tokens x 128 values / 2        = 1024 B
    //   K scales 128 channels x (f16 scale + zero) =  512 B (per channel, per block)
    //   V codes                                    = 1024 B
    //   V scales 16 tokens x 4 groups x 4 B        =  256 B
    // = 2816 B; x 32 heads x 32 layers = 2,883,584 B per block.
    const KvLayout kivi({32, 32, 128}, KvDtype::Int4Kivi, 16);
    QCOMPARE(kivi.k_row_scale_bytes(), std::size_t{0});
    QCOMPARE(kivi.v_row_scale_bytes(), std::size_t{16});
    QCOMPARE(kivi.k_channel_scale_bytes(), std::size_t{512});
    QCOMPARE(kivi.bytes_per_block(), std::size_t{2816} * 32 * 32);
    QCOMPARE(kivi.scale_bytes_per_block(), std::size_t{512 + 256} * 32 * 32);
    QCOMPARE(kivi.bytes_per_token(), std::size_t{2816} * 32 * 32 / 16); // divides evenly here
    // The tail: one f16 block, all layers, K and V: 16 x 128 x 2 B x 2 x 32 x 32.
    QCOMPARE(kivi.tail_bytes(), std::size_t{16} * 128 * 2 * 2 * 32 * 32);
    QCOMPARE(kivi.tail_bytes(), KvLayout({32, 32, 128}, KvDtype::F16, 16).bytes_per_block());
    // A sequence: its blocks (the partial last one included) and its tail.
    QCOMPARE(kivi.bytes_for_tokens(17), 2 * kivi.bytes_per_block() + kivi.tail_bytes());
    QCOMPARE(kivi.bytes_for_tokens(0), std::size_t{0});
    // No other dtype has a tail.
    for (KvDtype d : all_kv_dtypes())
        QCOMPARE(KvLayout({32, 32, 128}, d, 16).tail_bytes() > 0, seals_blocks(d));
    QCOMPARE(KvLayout({32, 32, 128}, KvDtype::Int4, 16).bytes_for_tokens(17),
             2 * KvLayout({32, 32, 128}, KvDtype::Int4, 16).bytes_per_block());
}

void TestKvLayout::kivi_int2_packs_four_per_byte() {
    // head_dim 8, 1 layer, 1 head, blocks of 3 (channel scales do not
    // divide by the block size): K codes 3 x 2 B, K scales 8 x 4 B,
    // V codes 3 x 2 B, V scales 3 x 1 group x 4 B = 6 + 32 + 6 + 12 = 56 B.
    const KvLayout int2({1, 1, 8}, KvDtype::Int2Kivi, 3);
    QCOMPARE(int2.row_value_bytes(), std::size_t{2});
    QCOMPARE(int2.bytes_per_block(), std::size_t{56});
    QCOMPARE(int2.bytes_per_token(), std::size_t{19}); // ceil(56 / 3)
    // head_dim 6: ceil(6 / 4) = 2 bytes per row.
    QCOMPARE(KvLayout({1, 1, 6}, KvDtype::Int2Kivi, 4).row_value_bytes(), std::size_t{2});
    QCOMPARE(parse_kv_dtype("int2-kivi"), KvDtype::Int2Kivi);
    QCOMPARE(to_string(KvDtype::Int4Kivi), std::string_view("int4-kivi"));
}

void TestKvLayout::block_regions_tile_every_byte_once_data() {
    QTest::addColumn<int>("dtype");
    for (KvDtype d : all_kv_dtypes())
        QTest::newRow(to_string(d).data()) << static_cast<int>(d);
}

void TestKvLayout::block_regions_tile_every_byte_once() {
    QFETCH(int, dtype);
    const KvLayout layout({3, 2, 64}, static_cast<KvDtype>(dtype), 4);
    std::vector<int> covered(layout.bytes_per_block(), 0);
    auto mark = [&](std::size_t offset, std::size_t size) {
        QVERIFY(offset + size <= covered.size());
        for (std::size_t i = 0; i < size; ++i)
            ++covered[offset + i];
    };
    for (std::uint32_t l = 0; l < 3; ++l)
        for (std::uint32_t h = 0; h < 2; ++h) {
            for (std::uint32_t s = 0; s < 4; ++s) {
                mark(layout.k_offset(l, h, s), layout.row_value_bytes());
                mark(layout.v_offset(l, h, s), layout.row_value_bytes());
                mark(layout.k_scale_offset(l, h, s), layout.k_row_scale_bytes());
                mark(layout.v_scale_offset(l, h, s), layout.v_row_scale_bytes());
            }
            // KIVI keys: one set of channel scales per head and block.
            mark(layout.k_scale_offset(l, h, 0) + 4 * layout.k_row_scale_bytes(), layout.k_channel_scale_bytes());
        }
    for (std::size_t i = 0; i < covered.size(); ++i)
        QVERIFY2(covered[i] == 1, qPrintable(QStringLiteral("byte %1 covered %2 times").arg(i).arg(covered[i])));
    if (!seals_blocks(layout.dtype()))
        QCOMPARE(layout.bytes_per_block(), layout.bytes_per_token() * 4);
    QCOMPARE(layout.value_head_stride(), layout.k_offset(2, 1, 0) - layout.k_offset(2, 0, 0));
    QCOMPARE(layout.value_slot_stride(), layout.v_offset(2, 1, 3) - layout.v_offset(2, 1, 2));
}

void TestKvLayout::rejects_bad_geometry() {
    QVERIFY_THROWS_EXCEPTION(Error, KvLayout({0, 1, 8}, KvDtype::F16, 16));
    QVERIFY_THROWS_EXCEPTION(Error, KvLayout({1, 1, 7}, KvDtype::F16, 16));
    QVERIFY_THROWS_EXCEPTION(Error, KvLayout({1, 1, 8}, KvDtype::F16, 0));
    QVERIFY_THROWS_EXCEPTION(Error, KvLayout({1, 1, 8}, KvDtype::F16, 2048));
    QVERIFY_THROWS_EXCEPTION(Error, parse_kv_dtype("int3"));
    QCOMPARE(parse_kv_dtype("fp8-e4m3"), KvDtype::Fp8E4M3);
}

void TestKvLayout::preset_parameter_counts_match_published() {
    // Published sizes, to the nearest 10 million.
    auto billions = [](const char* name) { return static_cast<double>(find_model_preset(name).parameters()) / 1e9; };
    QCOMPARE(qRound(billions("llama-2-7b") * 100), 674);
    QCOMPARE(qRound(billions("llama-2-13b") * 100), 1302);
    QCOMPARE(qRound(billions("llama-2-70b") * 100), 6898);
    QCOMPARE(qRound(billions("llama-3-8b") * 100), 803);
    QCOMPARE(qRound(billions("llama-3-70b") * 100), 7055);
    QCOMPARE(qRound(billions("mistral-7b") * 100), 724);
    QCOMPARE(qRound(billions("qwen2.5-7b") * 100), 762);
    QCOMPARE(qRound(billions("qwen2.5-0.5b") * 100), 49);
    QCOMPARE(qRound(billions("tinyllama-1.1b") * 100), 110);
    QVERIFY_THROWS_EXCEPTION(Error, find_model_preset("gpt-5"));
}

void TestKvLayout::calculator_answers() {
    // Llama-3-8B, 8192 tokens: 128 KiB per token, 1 GiB per sequence.
    KvMemoryQuestion q;
    q.geometry = find_model_preset("llama-3-8b").kv();
    q.tokens_per_sequence = 8192;
    q.sequences = 4;
    q.block_size = 16;
    q.device_bytes = 80ull << 30;
    q.weight_bytes = 16ull << 30;
    q.memory_fraction = 0.9;
    const KvMemoryAnswer f16 = answer_kv_memory(q, KvDtype::F16);
    QCOMPARE(f16.bytes_per_token, std::uint64_t{128 * 1024});
    QCOMPARE(f16.bytes_per_sequence, std::uint64_t{1} << 30);
    QCOMPARE(f16.total_bytes, std::uint64_t{4} << 30);
    // 80 GiB x 0.9 = 72 GiB, minus 16 GiB of weights = 56 GiB: 56 sequences.
    QCOMPARE(*f16.sequences_that_fit, std::uint64_t{56});
    // A partial last block still costs a whole block.
    q.tokens_per_sequence = 8193;
    QCOMPARE(answer_kv_memory(q, KvDtype::F16).bytes_per_sequence, (std::uint64_t{1} << 30) + 16 * 128 * 1024);
    // int4 stores 80 of f16's 256 bytes per row: 3.2x more sequences fit.
    q.tokens_per_sequence = 8192;
    QCOMPARE(*answer_kv_memory(q, KvDtype::Int4).sequences_that_fit, std::uint64_t{179});
    QCOMPARE(answer_kv_memory_all_dtypes(q).size(), all_kv_dtypes().size());
    // int4-kivi: 512 blocks of 32 layers x 8 heads x 2816 B (see
    // kivi_blocks_and_tail), plus the f16 tail: 16 x 128 x 2 B x 2 x 8 x 32.
    const KvMemoryAnswer kivi = answer_kv_memory(q, KvDtype::Int4Kivi);
    QCOMPARE(kivi.tail_bytes, std::uint64_t{2097152});
    QCOMPARE(kivi.bytes_per_sequence, std::uint64_t{512} * 32 * 8 * 2816 + 2097152);
}

QTEST_APPLESS_MAIN(TestKvLayout)
#include "test_kv_layout.moc"
