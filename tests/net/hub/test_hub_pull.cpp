// net/hub's client against the fake hub on loopback (fake_hub.h documents
// the answers it imitates): the quant it picks, where the files land (the
// hub cache layout llama.cpp's -hf reads), a resume after a dropped
// connection, a corrupted file refused, a gated repository, the errors that
// list what there is, progress, and the same over HTTPS.
#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fake_hub.h"
#include "hub_error_kind.h"
#include "net/hub/hub_client.h"
#include "net/hub/hub_error.h"
#include "support/test_certificate.h"
#include "support/test_models.h"
#include "support/wait.h"

using kvscope::hub::CachedModel;
using kvscope::hub::FileProgress;
using kvscope::hub::HubClient;
using kvscope::hub::HubError;
using kvscope::hub::HubErrorKind;
using kvscope::hub::HubReference;
using kvscope::hub::HubSettings;
using kvscope::test::FakeHub;
using kvscope::test::FakeHubFile;
using kvscope::test::FakeHubRepo;
using kvscope::test::kind_of;
namespace fs = std::filesystem;

namespace {

const std::string kRepo = "kvscope-test/stories260K-GGUF";
const std::string kCommit = "0123456789abcdef0123456789abcdef01234567";

std::string read_bytes(const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

// The path llama.cpp's -hf gives a file, from its documented scheme
// (common/hf-cache.cpp, the hub cache of huggingface.co/docs/hub/local-cache):
// CACHE/models--{org}--{name}/snapshots/{commit}/{file}, '/' in the
// repository id written "--".
fs::path llamacpp_path(const fs::path& cache, const std::string& repo, const std::string& commit,
                       const std::string& file) {
    std::string folder = "models--" + repo;
    for (std::size_t at = folder.find('/'); at != std::string::npos; at = folder.find('/'))
        folder.replace(at, 1, "--");
    return cache / folder / "snapshots" / commit / file;
}

// Files of the repository's tree, in the cache, whose name says a download
// is in progress or was left half-written.
int leftovers(const fs::path& cache) {
    int n = 0;
    std::error_code ec;
    for (const auto& e : fs::recursive_directory_iterator(cache, ec))
        n += e.path().string().ends_with(".downloadInProgress");
    return n;
}

// Where the system lists its file locks: Linux alone (POSIX has no way to
// see another thread waiting on a lock).
constexpr const char* kLockList = "/proc/locks";

// How many flock requests wait on `file`, from kLockList's lines
// "N: -> FLOCK ADVISORY WRITE PID MAJ:MIN:INODE 0 EOF".
int flock_waiters(const fs::path& file) {
    struct stat info {};
    if (::stat(file.c_str(), &info) != 0)
        return 0;
    std::ifstream locks(kLockList);
    const std::string inode = ":" + std::to_string(info.st_ino) + " ";
    int n = 0;
    for (std::string line; std::getline(locks, line);)
        n += line.find("->") != std::string::npos && line.find(inode) != std::string::npos;
    return n;
}

} // namespace

class TestHubPull : public QObject {
    Q_OBJECT

    QTemporaryDir temp_;
    std::string q4_, q8_, f16_;
    std::unique_ptr<FakeHub> hub_;

    std::vector<FakeHubRepo> repos() const {
        return {
            {kRepo,
             kCommit,
             {{"README.md", "# stories260K\n", false},
              {"stories260K-Q4_K_M.gguf", q4_, true},
              {"stories260K-Q8_0.gguf", q8_, true},
              {"stories260K-F16.gguf", f16_, true}},
             false},
            {"kvscope-test/gated-GGUF", std::string(40, 'a'), {{"gated-Q8_0.gguf", q8_, true}}, true},
            {"kvscope-test/no-gguf", std::string(40, 'b'), {{"model.safetensors", "weights", true}}, false},
            {"kvscope-test/split-GGUF",
             std::string(40, 'c'),
             {{"big-Q8_0-00002-of-00002.gguf", "second part", true},
              {"big-Q8_0-00001-of-00002.gguf", "first part", true},
              {"big-Q2_K.gguf", "another", true}},
             false},
        };
    }

    // A fresh cache folder for each test.
    HubSettings settings(const std::string& endpoint, const std::string& name) const {
        HubSettings s;
        s.endpoint = endpoint;
        s.cache_dir = fs::path(temp_.path().toStdString()) / name;
        s.attempts = 1;
        return s;
    }

private slots:
    void initTestCase() {
        KVSCOPE_REQUIRE_MODEL(q4, "stories260K-q4_k_m.gguf");
        q4_ = read_bytes(q4.toStdString());
        q8_ = read_bytes(kvscope::test::test_model_path("stories260K-q8_0.gguf").toStdString());
        f16_ = read_bytes(kvscope::test::test_model_path("stories260K-f16.gguf").toStdString());
        QVERIFY(!q4_.empty() && !q8_.empty() && !f16_.empty());
        hub_ = std::make_unique<FakeHub>(repos());
    }

    void default_quant_lands_where_llamacpp_looks() {
        const HubSettings s = settings(hub_->endpoint(), "default");
        const CachedModel m = HubClient(s).pull({kRepo, ""});
        QCOMPARE(m.files.size(), std::size_t{1});
        const fs::path expected = llamacpp_path(s.cache_dir, kRepo, kCommit, "stories260K-Q4_K_M.gguf");
        QCOMPARE(m.first().string(), expected.string());
        QVERIFY(fs::is_symlink(expected));
        QCOMPARE(fs::read_symlink(expected).string(), "../../blobs/" + FakeHub::sha256(q4_));
        QVERIFY(read_bytes(expected) == q4_);
        QCOMPARE(read_bytes(s.cache_dir / "models--kvscope-test--stories260K-GGUF" / "refs" / "main"), kCommit);
        QCOMPARE(leftovers(s.cache_dir), 0);
    }

    void asked_quant_in_any_case() {
        const HubSettings s = settings(hub_->endpoint(), "asked");
        const CachedModel m = HubClient(s).pull({kRepo, "q8_0"});
        QCOMPARE(m.first().filename().string(), std::string("stories260K-Q8_0.gguf"));
        QVERIFY(read_bytes(m.first()) == q8_);
    }

    void missing_quant_lists_those_there_are() {
        std::string message;
        QCOMPARE(kind_of([&] { HubClient(settings(hub_->endpoint(), "missing")).pull({kRepo, "Q5_K_M"}); }, &message),
                 HubErrorKind::NoSuchQuant);
        QVERIFY2(message.find("F16, Q4_K_M, Q8_0") != std::string::npos, message.c_str());
    }

    void unknown_repo_and_repo_without_gguf() {
        const HubSettings s = settings(hub_->endpoint(), "errors");
        QCOMPARE(kind_of([&] { HubClient(s).pull({"kvscope-test/nothing-here", ""}); }), HubErrorKind::NoSuchRepo);
        QCOMPARE(kind_of([&] { HubClient(s).pull({"kvscope-test/no-gguf", ""}); }), HubErrorKind::NoGguf);
    }

    void gated_repo_needs_a_token() {
        HubSettings s = settings(hub_->endpoint(), "gated");
        std::string message;
        QCOMPARE(kind_of([&] { HubClient(s).pull({"kvscope-test/gated-GGUF", ""}); }, &message), HubErrorKind::Gated);
        QVERIFY2(message.find("HF_TOKEN") != std::string::npos, message.c_str());
        QCOMPARE(leftovers(s.cache_dir), 0); // a refusal's body is not kept as a download
        s.token = FakeHub::kToken;
        QVERIFY(read_bytes(HubClient(s).pull({"kvscope-test/gated-GGUF", ""}).first()) == q8_);
    }

    void split_model_comes_whole_in_part_order() {
        const CachedModel m = HubClient(settings(hub_->endpoint(), "split")).pull({"kvscope-test/split-GGUF", "Q8_0"});
        QCOMPARE(m.files.size(), std::size_t{2});
        QCOMPARE(read_bytes(m.files[0]), std::string("first part"));
        QCOMPARE(read_bytes(m.files[1]), std::string("second part"));
    }

    void paged_file_list_is_read_to_its_end() {
        FakeHub hub(repos());
        hub.set_tree_page_size(1);
        const HubClient client(settings(hub.endpoint(), "paged"));
        QCOMPARE(client.list_files(kRepo, kCommit).size(), std::size_t{4});
        QVERIFY(read_bytes(client.pull({kRepo, "F16"}).first()) == f16_); // the last page's file
    }

    void dropped_connection_is_resumed_with_a_range() {
        HubSettings s = settings(hub_->endpoint(), "retry");
        s.attempts = 2;
        const std::size_t half = f16_.size() / 2;
        hub_->drop_next_download("stories260K-F16.gguf", half);
        const std::size_t before = hub_->cdn_requests().size();
        const CachedModel m = HubClient(s).pull({kRepo, "F16"});
        QVERIFY(read_bytes(m.first()) == f16_);
        const auto log = hub_->cdn_requests();
        QCOMPARE(log.size(), before + 2);
        QCOMPARE(log[before], FakeHub::sha256(f16_) + " -");
        QCOMPARE(log[before + 1], FakeHub::sha256(f16_) + " bytes=" + std::to_string(half) + "-");
    }

    void interrupted_download_stays_partial_until_resumed() {
        const HubSettings s = settings(hub_->endpoint(), "interrupted");
        const std::size_t part = q8_.size() / 3;
        hub_->drop_next_download("stories260K-Q8_0.gguf", part);
        QCOMPARE(kind_of([&] { HubClient(s).pull({kRepo, "Q8_0"}); }), HubErrorKind::Network);
        const fs::path final_path = llamacpp_path(s.cache_dir, kRepo, kCommit, "stories260K-Q8_0.gguf");
        const fs::path blob = s.cache_dir / "models--kvscope-test--stories260K-GGUF" / "blobs" / FakeHub::sha256(q8_);
        QVERIFY(!fs::exists(final_path) && !fs::exists(blob)); // nothing half-written under a final name
        const fs::path partial = blob.string() + ".downloadInProgress";
        QVERIFY(read_bytes(partial) == q8_.substr(0, part));
        const CachedModel m = HubClient(s).pull({kRepo, "Q8_0"});
        QVERIFY(read_bytes(m.first()) == q8_);
        QCOMPARE(hub_->cdn_requests().back(), FakeHub::sha256(q8_) + " bytes=" + std::to_string(part) + "-");
        QCOMPARE(leftovers(s.cache_dir), 0);
    }

    void corrupted_download_is_refused_and_removed() {
        FakeHub hub(repos());
        hub.corrupt("stories260K-Q4_K_M.gguf");
        const HubSettings s = settings(hub.endpoint(), "corrupt");
        std::string message;
        QCOMPARE(kind_of([&] { HubClient(s).pull({kRepo, ""}); }, &message), HubErrorKind::ChecksumMismatch);
        QVERIFY2(message.find(FakeHub::sha256(q4_)) != std::string::npos, message.c_str());
        QVERIFY(!fs::exists(llamacpp_path(s.cache_dir, kRepo, kCommit, "stories260K-Q4_K_M.gguf")));
        QVERIFY(fs::is_empty(s.cache_dir / "models--kvscope-test--stories260K-GGUF" / "blobs"));
    }

    void full_disk_is_said() {
        // /dev/full answers every write with ENOSPC: the download's part file is made to be it.
        const HubSettings s = settings(hub_->endpoint(), "full");
        const fs::path blobs = s.cache_dir / "models--kvscope-test--stories260K-GGUF" / "blobs";
        fs::create_directories(blobs);
        fs::create_symlink("/dev/full", blobs / (FakeHub::sha256(q8_) + ".downloadInProgress"));
        std::string message;
        QCOMPARE(kind_of([&] { HubClient(s).pull({kRepo, "Q8_0"}); }, &message), HubErrorKind::DiskFull);
        QVERIFY2(message.find("disk filled up") != std::string::npos, message.c_str());
        QVERIFY(!fs::exists(blobs / FakeHub::sha256(q8_)));
    }

    void finished_download_is_checked_not_fetched_again() {
        const HubSettings s = settings(hub_->endpoint(), "finished");
        const fs::path blobs = s.cache_dir / "models--kvscope-test--stories260K-GGUF" / "blobs";
        fs::create_directories(blobs);
        const fs::path part = blobs / (FakeHub::sha256(q8_) + ".downloadInProgress");
        std::ofstream(part, std::ios::binary) << q8_;
        const std::size_t before = hub_->cdn_requests().size();
        QVERIFY(read_bytes(HubClient(s).pull({kRepo, "Q8_0"}).first()) == q8_);
        QCOMPARE(hub_->cdn_requests().size(), before);
        // The same length of other bytes: refused by its hash and removed.
        const fs::path part4 = blobs / (FakeHub::sha256(q4_) + ".downloadInProgress");
        std::ofstream(part4, std::ios::binary) << std::string(q4_.size(), 'x');
        QCOMPARE(kind_of([&] { HubClient(s).pull({kRepo, "Q4_K_M"}); }), HubErrorKind::ChecksumMismatch);
        QVERIFY(!fs::exists(part4));
    }

    void download_waits_for_the_lock_holder() {
        if (!std::ifstream(kLockList))
            QSKIP("no list of waiting file locks on this system (Linux's /proc/locks)");
        // huggingface_hub's lock for the blob, held here as another downloader would hold it.
        const HubSettings s = settings(hub_->endpoint(), "locked");
        const fs::path repo_dir = s.cache_dir / "models--kvscope-test--stories260K-GGUF";
        const fs::path lock = s.cache_dir / ".locks" / repo_dir.filename() / (FakeHub::sha256(q8_) + ".lock");
        fs::create_directories(lock.parent_path());
        const int fd = ::open(lock.c_str(), O_RDWR | O_CREAT, 0644);
        QVERIFY(fd >= 0);
        QCOMPARE(::flock(fd, LOCK_EX), 0);
        const std::size_t cdn_before = hub_->cdn_requests().size();
        const int requests_before = hub_->requests();
        std::string pulled;
        std::thread puller([&] {
            try {
                pulled = read_bytes(HubClient(s).pull({kRepo, "Q8_0"}).first());
            } catch (const std::exception& e) {
                pulled = e.what();
            }
        });
        // It waits on the lock (Linux lists a blocked flock in kLockList, "->" before
        // it): the holder finishes the download meanwhile.
        const bool waiting = kvscope::test::wait_until([&] { return flock_waiters(lock) > 0; });
        fs::create_directories(repo_dir / "blobs");
        std::ofstream(repo_dir / "blobs" / FakeHub::sha256(q8_), std::ios::binary) << q8_;
        ::close(fd);
        puller.join();
        QVERIFY(waiting);
        QVERIFY(hub_->requests() >= requests_before + 2); // it had asked for the file list
        QVERIFY(pulled == q8_);
        QCOMPARE(hub_->cdn_requests().size(), cdn_before); // it took the holder's blob
    }

    void progress_is_told_to_the_end() {
        std::vector<FileProgress> seen;
        HubClient(settings(hub_->endpoint(), "progress")).pull({kRepo, "F16"}, [&](const FileProgress& p) {
            seen.push_back(p);
            return true;
        });
        QVERIFY(!seen.empty());
        for (std::size_t i = 1; i < seen.size(); ++i)
            QVERIFY(seen[i].transfer.done >= seen[i - 1].transfer.done);
        QCOMPARE(seen.back().transfer.done, std::uint64_t{f16_.size()});
        QCOMPARE(seen.back().transfer.total, std::uint64_t{f16_.size()});
        const std::string line = kvscope::hub::format_progress(seen.back());
        QVERIFY2(line.starts_with("stories260K-F16.gguf  0.5 / 0.5 MiB"), line.c_str());
        FileProgress midway{"x.gguf", 1, 2, {3u << 20, 10u << 20, 1u << 20, 2.0}};
        QCOMPARE(kvscope::hub::format_progress(midway),
                 std::string("x.gguf [1/2]  3.0 / 10.0 MiB  1.0 MiB/s  0:07 left"));
    }

    void cached_model_needs_no_network() {
        HubSettings s = settings(hub_->endpoint(), "cached");
        const CachedModel pulled = HubClient(s).pull({kRepo, "Q8_0"});
        s.endpoint = "http://127.0.0.1:1/"; // nothing listens there
        QCOMPARE(kvscope::hub::resolve_model({kRepo, "Q8_0"}, s).first().string(), pulled.first().string());
        QCOMPARE(kind_of([&] { kvscope::hub::resolve_model({kRepo, "F16"}, s); }), HubErrorKind::Network);
    }

    void https_with_the_test_certificate_and_refused_without() {
        QString error;
        const auto cert = kvscope::test::make_test_certificate(temp_.path(), &error);
        QVERIFY2(!cert.cert.isEmpty(), qPrintable(error));
        FakeHub hub(repos(), cert.cert.toStdString(), cert.key.toStdString());
        QVERIFY(hub.endpoint().starts_with("https://"));
        HubSettings s = settings(hub.endpoint(), "https");
        std::string message;
        QCOMPARE(kind_of([&] { HubClient(s).pull({kRepo, ""}); }, &message), HubErrorKind::Network);
        QVERIFY2(message.find("certificate") != std::string::npos, message.c_str());
        s.ca_file = cert.cert.toStdString();
        QVERIFY(read_bytes(HubClient(s).pull({kRepo, ""}).first()) == q4_);
    }
};

QTEST_GUILESS_MAIN(TestHubPull)
#include "test_hub_pull.moc"
