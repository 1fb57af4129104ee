// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// `mstar run`'s handling of its own input, over the echo model (no LibTorch): flags out of range
// and empty or unreadable prompts are bad input (exit 2) before anything loads; repeatable
// options take one value each; a plugin refusing its config is bad input; a WAV path that cannot
// be written is refused before the run; output that cannot be written fails the command; an
// interrupt cancels the requests and still reports.
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/wav_file.h"
#include "support/test_support.h"

namespace mstar {
namespace {

using test::RunCli;

const std::string kEcho = std::string(MSTAR_SOURCE_DIR) + "/manifests/models/echo.toml";

test::CommandResult RunEcho(const std::string& arguments) {
  return RunCli("run " + kEcho + " --quiet " + arguments);
}

TEST(RunCommand, FlagsOutOfRangeAreBadInputBeforeAnythingRuns) {
  for (const char* flags :
       {"--prompt hi --requests 0", "--prompt hi --requests 2000000", "--prompt hi --max-tokens -1",
        "--prompt hi --max-tokens 0", "--prompt hi --audio-rate 0"}) {
    test::CommandResult result = RunEcho(flags);
    EXPECT_EQ(result.exit_code, 2) << flags;
    EXPECT_NE(result.err.find("not in range"), std::string::npos) << flags << ": " << result.err;
  }
}

TEST(RunCommand, EmptyOrUnreadablePromptsAreBadInput) {
  test::TempDir dir;
  test::CommandResult empty = RunEcho("--prompt ''");
  EXPECT_EQ(empty.exit_code, 2);
  EXPECT_NE(empty.err.find("--prompt: the prompt is empty"), std::string::npos) << empty.err;
  test::CommandResult directory = RunEcho("--prompts " + dir.path());
  EXPECT_EQ(directory.exit_code, 2);
  EXPECT_NE(directory.err.find(dir.path() + " is a directory"), std::string::npos) << directory.err;
  test::CommandResult missing = RunEcho("--prompts " + dir.file("none.txt"));
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("cannot read " + dir.file("none.txt") + ": No such file"),
            std::string::npos)
      << missing.err;
  test::CommandResult no_path = RunEcho("--prompts ''");
  EXPECT_EQ(no_path.exit_code, 2);
  EXPECT_NE(no_path.err.find("--prompts: an empty path names no file"), std::string::npos)
      << no_path.err;
}

// A prompts file without line ends (/dev/zero) is refused once a line passes 16 MiB, not read
// until memory runs out.
TEST(RunCommand, APromptLineLongerThan16MiBIsBadInput) {
  test::CommandResult endless = RunEcho("--prompts /dev/zero");
  EXPECT_EQ(endless.exit_code, 2);
  EXPECT_NE(endless.err.find("--prompts: /dev/zero: line 1 is longer than 16 MiB"),
            std::string::npos)
      << endless.err;
}

// Every request holds its prompt until the summary: a long prompt repeated by --requests past
// 1 GiB in all is refused before anything is submitted.
TEST(RunCommand, PromptsRepeatedPastAGibibyteAreBadInput) {
  test::TempDir dir;
  test::WriteFile(dir.file("long.txt"), std::string(1 << 20, 'x') + "\n");
  const std::pair<std::string, std::string> runs[] = {
      {"--prompt " + std::string(2048, 'y') + " --requests 1000000",
       "--prompt: the requests' prompts add up to 1953 MiB, more than 1024 MiB"},
      {"--prompts " + dir.file("long.txt") + " --requests 2000",
       "--prompts: the requests' prompts add up to 2000 MiB, more than 1024 MiB"}};
  for (const auto& [flags, message] : runs) {
    test::CommandResult result = RunEcho(flags);
    EXPECT_EQ(result.exit_code, 2);
    EXPECT_NE(result.err.find(message), std::string::npos) << result.err;
  }
}

// Numbers are decimal: a leading zero (octal to CLI11) or 0x is refused, not read as 8 or 16.
TEST(RunCommand, NumbersWithLeadingZerosAreBadInput) {
  for (const char* flags : {"--prompt hi --requests 010", "--prompt hi --audio-rate 016000",
                            "--prompt hi --max-batch 08"}) {
    test::CommandResult result = RunEcho(flags);
    EXPECT_EQ(result.exit_code, 2) << flags;
    EXPECT_NE(result.err.find("is not a decimal number without leading zeros"), std::string::npos)
        << flags << ": " << result.err;
  }
  EXPECT_EQ(RunEcho("--prompt hi --max-batch 0").exit_code, 0);
}

// A count that is no decimal number is said to be one, not "out of range" as the number CLI11
// would read it as (1e3 as 1000, 0x10 as 16).
TEST(RunCommand, CountsThatAreNotDecimalNumbersAreBadInput) {
  for (const char* flags :
       {"--prompt hi --requests abc", "--prompt hi --requests 1e3", "--prompt hi --max-tokens 0x10",
        "--prompt hi --max-tokens +-5", "--prompt hi --max-recomputes ''"}) {
    test::CommandResult result = RunEcho(flags);
    EXPECT_EQ(result.exit_code, 2) << flags;
    EXPECT_NE(result.err.find("' is not a decimal number"), std::string::npos)
        << flags << ": " << result.err;
    EXPECT_EQ(result.err.find("not in range"), std::string::npos) << flags << ": " << result.err;
  }
}

// A closed pipe on stdout is output that cannot be written (exit 1), not a SIGPIPE that kills
// the run before its summary.
TEST(RunCommand, AClosedPipeOnStdoutIsAWriteError) {
  test::TempDir dir;
  const std::string command = std::string(MSTAR_CLI) + " run " + kEcho +
                              " --json --prompt hello --requests 200 2>/dev/null";
  test::Run(std::string("(")
                .append(command)
                .append("; echo $? > ")
                .append(dir.file("rc"))
                .append(") | true"));
  EXPECT_EQ(test::ReadFile(dir.file("rc")), "1\n");
}

// A reader that goes away while text streams (`| head`) cancels the run: what the request would
// still produce has nowhere to go. Here it would run for a hundred million tokens; the outer
// timeout only keeps a regression from hanging the suite.
TEST(RunCommand, AReaderThatGoesAwayCancelsTheRun) {
  test::TempDir dir;
  const std::string err = dir.file("err.txt");
  test::Run(std::string("(timeout -s KILL 60 ")
                .append(MSTAR_CLI)
                .append(" run " + kEcho + " --prompt hello --max-tokens 100000000")
                .append(" --set nodes.echo.config.repeat=100000000 2> " + err)
                .append("; echo $? > " + dir.file("rc") + ") | head -c 10 > /dev/null"));
  EXPECT_EQ(test::ReadFile(dir.file("rc")), "1\n") << test::ReadFile(err);
  EXPECT_NE(test::ReadFile(err).find("cannot write to stdout (Broken pipe); cancelling the "
                                     "requests still running"),
            std::string::npos)
      << test::ReadFile(err);
  EXPECT_NE(test::ReadFile(err).find("request cancelled"), std::string::npos)
      << test::ReadFile(err);
}

TEST(RunCommand, PromptFilesWithWindowsLineEndsGiveThePromptsWithoutCarriageReturns) {
  test::TempDir dir;
  test::WriteFile(dir.file("prompts.txt"), "hi\r\nyo\r\n");
  test::CommandResult result = RunEcho("--json --prompts " + dir.file("prompts.txt"));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  nlohmann::json summary = nlohmann::json::parse(result.out);
  ASSERT_EQ(summary["outputs"].size(), 2u);
  EXPECT_EQ(summary["outputs"][0]["text"], "hi");
  EXPECT_EQ(summary["outputs"][1]["text"], "yo");
}

TEST(RunCommand, RequestsTakeTheFirstPromptLinesOrReuseThemInTurn) {
  test::TempDir dir;
  test::WriteFile(dir.file("prompts.txt"), "a\nbb\nccc\n");
  for (const auto& [requests, texts] :
       std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"", {"a", "bb", "ccc"}},
           {"--requests 2", {"a", "bb"}},
           {"--requests 5", {"a", "bb", "ccc", "a", "bb"}}}) {
    test::CommandResult result =
        RunEcho("--json --prompts " + dir.file("prompts.txt") + " " + requests);
    ASSERT_EQ(result.exit_code, 0) << requests << ": " << result.err;
    nlohmann::json summary = nlohmann::json::parse(result.out);
    ASSERT_EQ(summary["outputs"].size(), texts.size()) << requests;
    for (size_t i = 0; i < texts.size(); ++i)
      EXPECT_EQ(summary["outputs"][i]["text"], texts[i]) << requests << ", request " << i + 1;
  }
}

// With --requests, only the lines it takes are read: a file longer than the limit on prompts
// serves its first lines.
TEST(RunCommand, RequestsReadOnlyTheLinesTheyTake) {
  test::TempDir dir;
  std::string lines;
  for (int i = 0; i < 1000001; ++i) lines += "p\n";
  test::WriteFile(dir.file("prompts.txt"), lines);
  test::CommandResult all = RunEcho("--json --prompts " + dir.file("prompts.txt"));
  EXPECT_EQ(all.exit_code, 2);
  EXPECT_NE(all.err.find("has more than 1000000 prompts"), std::string::npos) << all.err;
  test::CommandResult two =
      RunEcho("--json --prompts " + dir.file("prompts.txt") + " --requests 2");
  ASSERT_EQ(two.exit_code, 0) << two.err;
  EXPECT_EQ(nlohmann::json::parse(two.out)["outputs"].size(), 2u);
}

TEST(RunCommand, EmptyPromptLinesAreSkippedAndCounted) {
  test::TempDir dir;
  test::WriteFile(dir.file("prompts.txt"), "\nhi\n\n\nyo\n");
  test::CommandResult result =
      RunCli("run " + kEcho + " --json --prompts " + dir.file("prompts.txt"));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.err.find("--prompts: skipped 3 empty lines"), std::string::npos) << result.err;
  EXPECT_EQ(nlohmann::json::parse(result.out)["outputs"].size(), 2u);
}

// A request parameter no plugin read in the whole run is most likely misspelt: the run says so
// (and still runs); one the model reads, or a bound the host reads, is not reported.
TEST(RunCommand, ARequestParameterNoPluginReadIsReported) {
  test::CommandResult result = RunEcho(
      "--prompt hi --max-tokens 3 --param temprature=0.7 --param max_tokens_x=1 "
      "--param seed=7");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  for (const char* key : {"temprature", "max_tokens_x"}) {
    EXPECT_NE(result.err.find(std::string("--param: ") + key +
                              ": no plugin read this request parameter in the run"),
              std::string::npos)
        << result.err;
  }
  for (const char* read : {"max_tokens:", "seed:"})
    EXPECT_EQ(result.err.find(read), std::string::npos) << result.err;
}

// A request parameter the model bounds is checked against the model before it loads: the whole
// run is bad input (exit 2), not every request failing one by one (exit 1).
TEST(RunCommand, ARequestParameterOutOfItsRangeIsBadInputBeforeTheModelLoads) {
  for (const auto& [param, message] : std::vector<std::pair<std::string, std::string>>{
           {"max_tokens=0", "'max_tokens' must be in [1, 100000000], got 0"},
           {"max_tokens=1.5", "'max_tokens' must be an integer in [1, 100000000]"}}) {
    // Not --quiet, so that "loading model" would show had the model started loading.
    test::CommandResult result = RunCli("run " + kEcho + " --prompt hi --param " + param);
    EXPECT_EQ(result.exit_code, 2) << param;
    EXPECT_NE(result.err.find("--param: request parameter " + message), std::string::npos)
        << result.err;
    EXPECT_EQ(result.err.find("loading model"), std::string::npos) << result.err;
  }
}

// Each --param is read on its own: an error names that one at its own column; dotted keys of
// one table merge across flags; a key given twice (--max-tokens is max_tokens) is bad input.
TEST(RunCommand, EachParamIsReadOnItsOwnAndAKeyGivenTwiceIsRefused) {
  const std::pair<std::string, std::string> bad[] = {
      {"--max-tokens 4 --param x=1 --param 'y=[1,'",
       "mstar run: --param 'y=[1,':1:7: TOML syntax error"},
      {"--param a.b=1 --param a=2", "mstar run: --param: request parameter 'a' is given twice"},
      {"--param a.b=1 --param a.b=2", "mstar run: --param: request parameter 'a.b' is given twice"},
      {"--max-tokens 4 --param max_tokens=3",
       "mstar run: --param: request parameter 'max_tokens' is given twice"},
  };
  for (const auto& [flags, message] : bad) {
    test::CommandResult result = RunEcho("--prompt hi " + flags);
    EXPECT_EQ(result.exit_code, 2) << flags;
    EXPECT_NE(result.err.find(message), std::string::npos) << flags << ": " << result.err;
  }
  test::CommandResult merged = RunEcho("--prompt hi --param a.b=1 --param a.c=2 --max-tokens 1");
  EXPECT_EQ(merged.exit_code, 0) << merged.err;
}

// The first interrupt cancels what runs and the run still reports (exit 130 for SIGINT); here the
// requests would otherwise run for a hundred million tokens. The signal is sent once progress
// shows, so the handler is in place.
TEST(RunCommand, AnInterruptCancelsTheRequestsAndTheRunStillReports) {
  test::TempDir dir;
  const std::string out = dir.file("out.json"), err = dir.file("err.txt");
  test::CommandResult result =
      test::Run(std::string(MSTAR_CLI) + " run " + kEcho +
                " --json --prompt hello --requests 3 --max-tokens 100000000"
                " --set nodes.echo.config.repeat=100000000 > " +
                out + " 2> " + err + " & pid=$!; until grep -q requests, " + err +
                " || ! kill -0 $pid 2>/dev/null; do sleep 0.1; done; kill -INT $pid; wait $pid");
  EXPECT_EQ(result.exit_code, 130) << test::ReadFile(err);
  nlohmann::json summary = nlohmann::json::parse(test::ReadFile(out));
  EXPECT_TRUE(summary["interrupted"].get<bool>());
  EXPECT_EQ(summary["cancelled"], 3u);  // cancelled, not failed
  EXPECT_EQ(summary["failed"], 0u);
  ASSERT_EQ(summary["outputs"].size(), 3u);
  for (const nlohmann::json& output : summary["outputs"]) {
    EXPECT_EQ(output["end"], "cancelled") << output.dump();
    EXPECT_LT(output["tokens"].get<uint64_t>(), 100000000u);
  }
  EXPECT_NE(test::ReadFile(err).find("interrupted; cancelling the requests still running"),
            std::string::npos);
}

TEST(RunCommand, PromptsComeFromStandardInputWithADash) {
  test::CommandResult result = test::Run("printf 'ab\\ncd\\n' | " + std::string(MSTAR_CLI) +
                                         " run " + kEcho + " --quiet --json --prompts -");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  nlohmann::json summary = nlohmann::json::parse(result.out);
  ASSERT_EQ(summary["outputs"].size(), 2u);
  EXPECT_EQ(summary["outputs"][0]["text"], "ab");
  EXPECT_EQ(summary["outputs"][1]["text"], "cd");
}

TEST(RunCommand, ARepeatableOptionTakesOneValueSoTheManifestMayFollowIt) {
  test::CommandResult result = RunCli("run --set model.max_output_tokens=1 --param top_k=1 " +
                                      kEcho + " --prompt hello --quiet --json");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(nlohmann::json::parse(result.out)["outputs"][0]["tokens"], 1);
}

TEST(RunCommand, APluginPathThatIsNotADirectoryIsBadInput) {
  test::CommandResult result = RunEcho("--prompt hi --plugin-path /nonexistent/plugins");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("--plugin-path /nonexistent/plugins"), std::string::npos) << result.err;
}

TEST(RunCommand, ADeviceThisMachineDoesNotHaveIsBadInputNamingTheKey) {
  test::CommandResult result = RunEcho("--prompt hi --set nodes.echo.device=cuda:9");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("echo.toml:12:1: nodes.echo.device: "), std::string::npos)
      << result.err;
}

TEST(RunCommand, APluginRefusingItsConfigIsBadInput) {
  test::CommandResult result = RunEcho("--prompt hi --set nodes.echo.config.end_token=zero");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("nodes.echo.config.end_token: expected an integer"), std::string::npos)
      << result.err;
}

// The echo model with its chunk output labelled audio (with `chunk_keys` after the modality), so
// that --audio applies.
std::string AudioEcho(const test::TempDir& dir, const std::string& chunk_keys = "") {
  std::string text = test::ReadFile(kEcho);
  const std::string from = "emit = \"chunks\", modality = \"tokens\"";
  text.replace(text.find(from), from.size(),
               "emit = \"chunks\", modality = \"audio\"" + chunk_keys);
  test::WriteFile(dir.file("audio-echo.toml"), text);
  return dir.file("audio-echo.toml");
}

uint32_t WavRate(const std::string& path) {
  uint32_t rate = 0;
  Result<std::vector<float>> samples = ReadWav(path, &rate);
  EXPECT_TRUE(samples.ok()) << samples.status().message();
  return rate;
}

// A WAV file is written at its output's declared sample_rate; --audio-rate overrides it; with
// neither, at 24000 Hz with a warning that says so.
TEST(RunCommand, AudioIsWrittenAtItsOutputsSampleRate) {
  test::TempDir dir;
  const std::string declared = AudioEcho(dir, ", sample_rate = 16000");
  test::CommandResult run =
      RunCli("run " + declared + " --json --prompt hello --audio " + dir.file("a.wav"));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  nlohmann::json files = nlohmann::json::parse(run.out)["audio_files"];
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0]["sample_rate"], 16000);
  EXPECT_EQ(files[0]["output"], "chunks");
  EXPECT_FALSE(files[0]["partial"].get<bool>());
  EXPECT_EQ(WavRate(dir.file("a.wav")), 16000u);
  EXPECT_EQ(run.err.find("declares no sample_rate"), std::string::npos) << run.err;

  run = RunCli("run " + declared + " --json --prompt hello --audio-rate 8000 --audio " +
               dir.file("b.wav"));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(WavRate(dir.file("b.wav")), 8000u);

  const std::string undeclared = AudioEcho(dir);
  run = RunCli("run " + undeclared + " --json --prompt hello --audio " + dir.file("c.wav"));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(WavRate(dir.file("c.wav")), 24000u);
  EXPECT_NE(run.err.find("audio output 'chunks' declares no sample_rate on its emit edge; writing "
                         "it at 24000 Hz"),
            std::string::npos)
      << run.err;
}

// Two audio outputs are two files, each named after its output; neither is mixed into the other.
TEST(RunCommand, EachAudioOutputGetsItsOwnFile) {
  test::TempDir dir;
  std::string model = AudioEcho(dir, ", sample_rate = 16000");
  std::string text = test::ReadFile(model);
  const std::string from = "emit = \"text\", modality = \"text\"";
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from))
    text.replace(at, from.size(), "emit = \"text\", modality = \"audio\", sample_rate = 8000");
  test::WriteFile(model, text);
  test::CommandResult run =
      RunCli("run " + model + " --json --prompt hello --requests 2 --audio " + dir.file("a.wav"));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  nlohmann::json files = nlohmann::json::parse(run.out)["audio_files"];
  ASSERT_EQ(files.size(), 4u) << files.dump();
  EXPECT_EQ(WavRate(dir.file("a-1-chunks.wav")), 16000u);
  EXPECT_EQ(WavRate(dir.file("a-1-text.wav")), 8000u);
  EXPECT_EQ(WavRate(dir.file("a-2-chunks.wav")), 16000u);
  // "hello" as int64 elements: 5 samples (int64 PCM, so near silence).
  uint32_t rate = 0;
  Result<std::vector<float>> text_samples = ReadWav(dir.file("a-2-text.wav"), &rate);
  ASSERT_TRUE(text_samples.ok()) << text_samples.status().message();
  EXPECT_EQ(text_samples->size(), 5u);
}

// A request that ends before it is done still has its audio written, marked partial.
TEST(RunCommand, TheAudioOfACancelledRequestIsWrittenMarkedPartial) {
  test::TempDir dir;
  const std::string model = AudioEcho(dir, ", sample_rate = 16000");
  const std::string out = dir.file("out.json"), err = dir.file("err.txt");
  test::CommandResult result =
      test::Run(std::string(MSTAR_CLI) + " run " + model +
                " --json --prompt hello --max-tokens 100000000 --audio " + dir.file("a.wav") +
                " --set nodes.echo.config.repeat=100000000 > " + out + " 2> " + err +
                " & pid=$!; until grep -q requests, " + err +
                " || ! kill -0 $pid 2>/dev/null; do sleep 0.1; done; kill -INT $pid; wait $pid");
  EXPECT_EQ(result.exit_code, 130) << test::ReadFile(err);
  nlohmann::json summary = nlohmann::json::parse(test::ReadFile(out));
  ASSERT_EQ(summary["outputs"].size(), 1u);
  EXPECT_EQ(summary["outputs"][0]["end"], "cancelled");
  ASSERT_EQ(summary["audio_files"].size(), 1u) << summary["audio_files"].dump();
  EXPECT_TRUE(summary["audio_files"][0]["partial"].get<bool>());
  EXPECT_EQ(WavRate(dir.file("a.wav")), 16000u);
}

TEST(RunCommand, AWavPathThatCannotBeWrittenIsRefusedBeforeTheRun) {
  test::TempDir dir;
  const std::string model = AudioEcho(dir);
  test::CommandResult nowhere =
      RunCli("run " + model + " --quiet --prompt hi --audio " + dir.file("no/such/dir/a.wav"));
  EXPECT_EQ(nowhere.exit_code, 2);
  EXPECT_NE(nowhere.err.find("--audio: " + dir.file("no/such/dir") + " is not a directory"),
            std::string::npos)
      << nowhere.err;
  EXPECT_EQ(nowhere.out.find("requests completed"), std::string::npos) << "nothing ran";
  test::CommandResult into_directory =
      RunCli("run " + model + " --quiet --prompt hi --audio " + dir.path());
  EXPECT_EQ(into_directory.exit_code, 2);
  test::CommandResult written =
      RunCli("run " + model + " --quiet --json --prompt hello --audio " + dir.file("a.wav"));
  ASSERT_EQ(written.exit_code, 0) << written.err;
  nlohmann::json summary = nlohmann::json::parse(written.out);
  EXPECT_EQ(summary["audio_files"].size(), 1u);
  EXPECT_TRUE(summary["errors"].empty());
}

// Audio samples of an integer or float PCM type are written; chunks of a type that is not one
// (uint16 here) leave their output's file partial and the run failed, saying why.
TEST(RunCommand, AudioOfAnUnreadableSampleTypeIsReportedAndItsFileMarkedPartial) {
  test::TempDir dir;
  auto model = [&](const std::string& dtype) {
    const std::string path = dir.file(dtype + ".toml");
    test::WriteFile(path, R"(format = 1
[model]
name = "samples"
[nodes.a]
plugin = "kit_add"
[nodes.a.config]
samples_dtype = ")" + dtype + R"("
[partitions.main]
initial = "w"
[walks.w]
partition = "main"
run = "a"
inputs = { "a.tokens" = "request.prompt" }
edges = [{ from = "a.samples", emit = "audio", modality = "audio", sample_rate = 8000 }]
)");
    return path;
  };
  const std::string kit = "MSTAR_PLUGIN_PATH=" + test::TestPluginDir("kit") + " ";
  test::CommandResult pcm = test::Run(kit + MSTAR_CLI + " run " + model("int16") +
                                      " --json --prompt AB --audio " + dir.file("pcm.wav"));
  ASSERT_EQ(pcm.exit_code, 0) << pcm.err;
  uint32_t rate = 0;
  Result<std::vector<float>> samples = ReadWav(dir.file("pcm.wav"), &rate);
  ASSERT_TRUE(samples.ok()) << samples.status().message();
  EXPECT_EQ(samples->size(), 2u);  // 'A' * 256 and 'B' * 256 as int16 PCM

  test::CommandResult bad = test::Run(kit + MSTAR_CLI + " run " + model("uint16") +
                                      " --json --prompt AB --audio " + dir.file("bad.wav"));
  EXPECT_EQ(bad.exit_code, 1) << bad.err;
  const std::string why =
      "request 1, audio output 'audio': chunk 0: audio samples of type uint16 "
      "are not supported";
  EXPECT_NE(bad.err.find(why), std::string::npos) << bad.err;
  nlohmann::json summary = nlohmann::json::parse(bad.out);
  ASSERT_EQ(summary["errors"].size(), 1u) << summary.dump();
  EXPECT_NE(summary["errors"][0].get<std::string>().find(why), std::string::npos);
  EXPECT_TRUE(summary["audio_files"].empty()) << "no sample could be read: no file";
  EXPECT_FALSE(std::filesystem::exists(dir.file("bad.wav")));
}

// Before the model is loaded there is nothing to report: a Ctrl-C while the prompts are read (a
// FIFO no one writes) ends the run at once, as the signal does by default. (The outer timeout
// only keeps a regression from hanging the suite.)
TEST(RunCommand, ACtrlCBeforeTheModelIsLoadedEndsTheRunAtOnce) {
  test::TempDir dir;
  const std::string fifo = dir.file("prompts");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  test::CommandResult result =
      test::Run("timeout -s KILL 30 " + std::string(MSTAR_CLI) + " run " + kEcho +
                " --quiet --prompts " + fifo + " & pid=$!; sleep 1; kill -INT $pid; wait $pid");
  EXPECT_EQ(result.exit_code, 128 + SIGINT) << result.err;
}

// A WAV path that is a symbolic link writes the file it names (the link stays); one that is not a
// regular file (a device) is refused before the run rather than replaced.
TEST(RunCommand, AWavPathThroughALinkWritesItsTargetAndADeviceIsRefused) {
  test::TempDir dir;
  const std::string model = AudioEcho(dir, ", sample_rate = 16000");
  ASSERT_EQ(::symlink(dir.file("real.wav").c_str(), dir.file("link.wav").c_str()), 0);
  test::CommandResult run =
      RunCli("run " + model + " --quiet --prompt hello --audio " + dir.file("link.wav"));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(std::filesystem::is_symlink(dir.file("link.wav")));
  EXPECT_EQ(WavRate(dir.file("real.wav")), 16000u);
  // The file is written beside the link's target: a target directory that is not there is
  // refused before the run, whatever the link's own directory is. Several requests' files are
  // written beside the link (their names are not the link's), so its target does not matter.
  ASSERT_EQ(::symlink(dir.file("gone/a.wav").c_str(), dir.file("dangling.wav").c_str()), 0);
  test::CommandResult dangling =
      RunCli("run " + model + " --quiet --prompt hi --audio " + dir.file("dangling.wav"));
  EXPECT_EQ(dangling.exit_code, 2);
  EXPECT_NE(dangling.err.find("--audio: " + dir.file("gone") + " is not a directory"),
            std::string::npos)
      << dangling.err;
  test::CommandResult two = RunCli("run " + model + " --quiet --prompt hi --requests 2 --audio " +
                                   dir.file("dangling.wav"));
  ASSERT_EQ(two.exit_code, 0) << two.err;
  EXPECT_EQ(WavRate(dir.file("dangling-2.wav")), 16000u);
  test::CommandResult device = RunCli("run " + model + " --quiet --prompt hi --audio /dev/null");
  EXPECT_EQ(device.exit_code, 2);
  EXPECT_NE(device.err.find("--audio: /dev/null is not a regular file"), std::string::npos)
      << device.err;
}

// token_ids gathers the values of every text and tokens output, whatever the output is named.
TEST(RunCommand, TokenIdsFollowTheModalityNotTheOutputsName) {
  test::TempDir dir;
  std::string text = test::ReadFile(kEcho);
  const std::string from = "emit = \"text\", modality = \"text\"";
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from))
    text.replace(at, from.size(), "emit = \"reply\", modality = \"text\"");
  test::WriteFile(dir.file("reply.toml"), text);
  test::CommandResult run = RunCli("run " + dir.file("reply.toml") + " --quiet --json --prompt hi");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const nlohmann::json output = nlohmann::json::parse(run.out)["outputs"][0];
  ASSERT_TRUE(output.contains("token_ids")) << output.dump();
  EXPECT_EQ(output["token_ids"].size(), 2u + 2u) << output.dump();  // "hi" as text and as chunks
}

TEST(RunCommand, OutputThatCannotBeWrittenFailsTheCommand) {
  // The summary at the end, and text streamed as it comes (whose failed write was long ago when
  // the command ends): either way the reason is the write's.
  for (const char* flags : {" --quiet --json --prompt hi", " --prompt hi"}) {
    test::CommandResult full =
        test::Run(std::string(MSTAR_CLI) + " run " + kEcho + flags + " > /dev/full");
    EXPECT_EQ(full.exit_code, 1) << flags;
    EXPECT_NE(full.err.find("mstar: cannot write the output: No space left on device"),
              std::string::npos)
        << flags << ": " << full.err;
  }
}

// --quiet leaves out the outputs and progress, not why a request did not complete.
TEST(RunCommand, QuietStillSaysWhyRequestsFailed) {
  test::CommandResult run = test::Run("MSTAR_FAULT=plugin_call:8 " + std::string(MSTAR_CLI) +
                                      " run " + kEcho + " --quiet --prompt hello --requests 2");
  EXPECT_EQ(run.exit_code, 1) << run.err;
  EXPECT_NE(run.err.find("(failed): "), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("injected fault"), std::string::npos) << run.err;
}

}  // namespace
}  // namespace mstar
