// net/hub without a network: references as -hf spells them, the GGUF a
// quant picks (names as llama.cpp's common/download.cpp reads them), the
// cache folder the environment chooses (llama.cpp's order), and the cache's
// layout as a hand-made one is read back.
#include <QTemporaryDir>
#include <QtTest>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "net/hub/gguf_choice.h"
#include "net/hub/hub_cache.h"
#include "net/hub/hub_error.h"
#include "net/hub/hub_reference.h"
#include "net/hub/hub_settings.h"
#include "tests/net/hub/hub_error_kind.h"

using namespace kvscope::hub;
using kvscope::test::kind_of;
namespace fs = std::filesystem;

namespace {

std::vector<RepoFile> named(const std::vector<std::string>& paths) {
    std::vector<RepoFile> files;
    for (const auto& p : paths)
        files.push_back({p, 1, {}, false});
    return files;
}

std::string chosen(const std::vector<std::string>& paths, std::string_view quant) {
    std::string out;
    for (const RepoFile& f : choose_gguf(named(paths), quant, "org/repo"))
        out += (out.empty() ? "" : " ") + f.path;
    return out;
}

} // namespace

class TestHubNames : public QObject {
    Q_OBJECT

private slots:
    void references_as_llamacpp_spells_them() {
        const HubReference r = parse_hub_reference("ggml-org/Qwen3-0.6B-GGUF:q8_0");
        QCOMPARE(r.repo, std::string("ggml-org/Qwen3-0.6B-GGUF"));
        QCOMPARE(r.quant, std::string("Q8_0"));
        QCOMPARE(parse_hub_reference("a/b").quant, std::string());
        QCOMPARE(hub_reference_of_path("hf://a/b:Q4_K_M")->text(), std::string("a/b:Q4_K_M"));
        QVERIFY(!hub_reference_of_path("/models/a.gguf"));
        for (const char* bad : {"noslash", "a/b/c", "/a", "a//b", "a/b:", "a/b:Q4 K", "a/-b", "hf://a"})
            QCOMPARE(kind_of([&] { parse_hub_reference(bad); }), HubErrorKind::BadReference);
        QCOMPARE(kind_of([] { hub_reference_of_path("hf://a"); }), HubErrorKind::BadReference);
    }

    void names_carry_quant_and_parts() {
        const auto n = parse_gguf_name("sub/Model-7B-Q4_K_M-00002-of-00003.gguf");
        QVERIFY(n);
        QCOMPARE(n->stem, std::string("sub/Model-7B-Q4_K_M"));
        QCOMPARE(n->quant, std::string("Q4_K_M"));
        QCOMPARE(n->part, 2);
        QCOMPARE(n->parts, 3);
        QCOMPARE(parse_gguf_name("qwen2.5-0.5b-instruct-q4_k_m.gguf")->quant, std::string("Q4_K_M"));
        QCOMPARE(parse_gguf_name("model.Q8_0.gguf")->quant, std::string("Q8_0"));
        QCOMPARE(parse_gguf_name("model.gguf")->quant, std::string());
        QVERIFY(!parse_gguf_name("model.safetensors"));
        QCOMPARE(quant_bits("IQ4_XS"), 4);
        QCOMPARE(quant_bits("F16"), 16);
        QVERIFY(!is_model_gguf("mmproj-model-F16.gguf"));
        QVERIFY(!is_model_gguf("imatrix.gguf"));
    }

    void default_is_q4_k_m_else_the_closest() {
        const std::vector<std::string> all{"m-F16.gguf", "m-Q8_0.gguf", "m-Q4_K_M.gguf", "mmproj-m-Q4_K_M.gguf"};
        QCOMPARE(chosen(all, ""), std::string("m-Q4_K_M.gguf"));
        QCOMPARE(chosen({"m-F16.gguf", "m-Q8_0.gguf", "m-Q5_K_M.gguf", "m-Q3_K_M.gguf"}, ""),
                 std::string("m-Q5_K_M.gguf"));
        QCOMPARE(chosen({"m-F16.gguf", "m-Q8_0.gguf"}, ""), std::string("m-Q8_0.gguf"));
        QCOMPARE(chosen({"README.md", "model.gguf"}, ""), std::string("model.gguf"));
        QCOMPARE(chosen(all, "f16"), std::string("m-F16.gguf"));
    }

    void split_parts_come_together_in_order() {
        const std::vector<std::string> files{"x-Q8_0-00003-of-00003.gguf", "x-Q8_0-00001-of-00003.gguf",
                                             "x-Q8_0-00002-of-00003.gguf", "x-Q2_K.gguf"};
        QCOMPARE(chosen(files, "Q8_0"),
                 std::string("x-Q8_0-00001-of-00003.gguf x-Q8_0-00002-of-00003.gguf x-Q8_0-00003-of-00003.gguf"));
        QCOMPARE(kind_of([&] { chosen({files[1], files[0]}, "Q8_0"); }), HubErrorKind::NoSuchQuant);
    }

    void missing_quant_and_no_gguf_say_what_there_is() {
        std::string message;
        QCOMPARE(kind_of(
                     [&] {
                         chosen({"m-Q8_0.gguf", "m-F16.gguf"}, "Q4_K_M");
                     },
                     &message),
                 HubErrorKind::NoSuchQuant);
        QVERIFY2(message.find("F16, Q8_0") != std::string::npos, message.c_str());
        QCOMPARE(kind_of([] { chosen({"model.safetensors", "mmproj-F16.gguf"}, ""); }), HubErrorKind::NoGguf);
    }

    void cache_folder_follows_llamacpp_order() {
        for (const char* v : {"LLAMA_CACHE", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME"})
            qunsetenv(v);
        qputenv("HOME", "/home/u");
        QCOMPARE(hub_cache_dir_from_environment(), fs::path("/home/u/.cache/huggingface/hub"));
        qputenv("XDG_CACHE_HOME", "/x");
        QCOMPARE(hub_cache_dir_from_environment(), fs::path("/x/huggingface/hub"));
        qputenv("HF_HOME", "/hf");
        QCOMPARE(hub_cache_dir_from_environment(), fs::path("/hf/hub"));
        qputenv("HF_HUB_CACHE", "/hub");
        QCOMPARE(hub_cache_dir_from_environment(), fs::path("/hub"));
        qputenv("LLAMA_CACHE", "/llama");
        QCOMPARE(hub_cache_dir_from_environment(), fs::path("/llama"));
        qputenv("HF_ENDPOINT", "http://mirror.example:8080");
        QCOMPARE(hub_settings_from_environment().endpoint, std::string("http://mirror.example:8080/"));
    }

    void hand_made_cache_is_read_back() {
        QTemporaryDir dir;
        const HubCache cache(dir.path().toStdString());
        const std::string commit(40, 'e');
        const fs::path snapshot = cache.snapshot_path("org/m-GGUF", commit, "m-Q8_0.gguf");
        QCOMPARE(snapshot,
                 fs::path(dir.path().toStdString()) / "models--org--m-GGUF" / "snapshots" / commit / "m-Q8_0.gguf");
        QVERIFY(!cache.cached_commit("org/m-GGUF"));
        fs::create_directories(snapshot.parent_path());
        std::ofstream(snapshot) << "bytes";
        cache.write_ref("org/m-GGUF", "main", commit);
        QCOMPARE(*cache.cached_commit("org/m-GGUF"), commit);
        QCOMPARE(cache.cached_repos(), std::vector<std::string>{"org/m-GGUF"});
        const auto files = cache.cached_files("org/m-GGUF");
        QCOMPARE(files.size(), std::size_t{1});
        QCOMPARE(files[0].path, std::string("m-Q8_0.gguf"));
        QCOMPARE(files[0].size, std::uint64_t{5});
    }
};

QTEST_GUILESS_MAIN(TestHubNames)
#include "test_hub_names.moc"
