// The CUDA block copy (copy-on-write on the device) equals a host memcpy.
#include <QtTest>

#include <cstring>
#include <random>
#include <vector>

#include "engine/core/device.h"
#include "kernels/cuda/copy_blocks.h"

class TestCudaCopyBlocks : public QObject {
    Q_OBJECT
private slots:
    void copies_like_memcpy_data();
    void copies_like_memcpy();
};

void TestCudaCopyBlocks::copies_like_memcpy_data() {
    QTest::addColumn<int>("bytes_per_block");
    QTest::newRow("16-byte words") << 4096;
    QTest::newRow("odd size") << 1234;
}

void TestCudaCopyBlocks::copies_like_memcpy() {
    QFETCH(int, bytes_per_block);
    const kvscope::ComputeDevice device = kvscope::detect_device();
    if (!device.cuda)
        QSKIP(qPrintable(QString::fromStdString("no CUDA device: " + device.note)));
    const std::size_t blocks = 64, bpb = static_cast<std::size_t>(bytes_per_block);
    std::vector<std::byte> pool(blocks * bpb);
    std::mt19937 rng(7);
    for (auto& b : pool)
        b = static_cast<std::byte>(rng());
    const std::vector<std::uint32_t> src{3, 10, 63, 0}, dst{40, 11, 2, 62};
    std::vector<std::byte> expected = pool;
    for (std::size_t i = 0; i < src.size(); ++i)
        std::memcpy(expected.data() + dst[i] * bpb, pool.data() + src[i] * bpb, bpb);
    const std::string error = kvscope::kernels::cuda::copy_blocks_on_device(pool.data(), pool.size(), bpb, src.data(),
                                                                           dst.data(), src.size());
    QVERIFY2(error.empty(), error.c_str());
    QVERIFY(pool == expected);
}

QTEST_APPLESS_MAIN(TestCudaCopyBlocks)
#include "test_cuda_copy_blocks.moc"
