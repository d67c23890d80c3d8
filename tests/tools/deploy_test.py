#!/usr/bin/python3
"""deploy/: the Dockerfile and the KServe examples agree with the spindle they
package. Docker is not run: the YAML files are parsed (python3-yaml), the
runtime and the service name each other and the same ports, the image's
runtime packages cover the shared libraries the built spindle links, and the
Dockerfile's serve command line starts a server.

Usage: deploy_test.py SPINDLE_CLI
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest

SPINDLE = os.environ.get("SPINDLE_CLI", "spindle")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEPLOY = os.path.join(ROOT, "deploy")

try:
    import yaml
except ImportError:
    yaml = None


def dockerfile():
    with open(os.path.join(DEPLOY, "Dockerfile")) as f:
        return f.read()


def json_array(text, instruction):
    m = re.search(r"^%s (\[.*\])$" % instruction, text, re.M)
    return json.loads(m.group(1))


@unittest.skipIf(yaml is None, "python3-yaml is not installed")
class KServeYamlTest(unittest.TestCase):
    def load(self, name):
        with open(os.path.join(DEPLOY, "kserve", name)) as f:
            docs = list(yaml.safe_load_all(f))
        self.assertEqual(len(docs), 1)
        return docs[0]

    def test_runtime_and_service(self):
        runtime = self.load("servingruntime.yaml")
        service = self.load("inferenceservice.yaml")
        self.assertEqual((runtime["apiVersion"], runtime["kind"]), ("serving.kserve.io/v1alpha1", "ServingRuntime"))
        self.assertEqual((service["apiVersion"], service["kind"]), ("serving.kserve.io/v1beta1", "InferenceService"))
        model = service["spec"]["predictor"]["model"]
        self.assertEqual(model["runtime"], runtime["metadata"]["name"])
        self.assertIn(model["modelFormat"]["name"], [f["name"] for f in runtime["spec"]["supportedModelFormats"]])
        self.assertIn(model["protocolVersion"], runtime["spec"]["protocolVersions"])
        container = runtime["spec"]["containers"][0]
        self.assertEqual(container["name"], "kserve-container")
        entry = json_array(dockerfile(), "ENTRYPOINT")
        http_port = int(entry[entry.index("--http-port") + 1])
        self.assertEqual(container["ports"][0]["containerPort"], http_port)
        for probe, path in (("readinessProbe", "/v2/health/ready"), ("livenessProbe", "/v2/health/live")):
            self.assertEqual(container[probe]["httpGet"], {"path": path, "port": http_port})
        self.assertEqual(runtime["spec"]["annotations"]["prometheus.kserve.io/path"], "/metrics")
        # The repository KServe downloads lands where the runtime looks.
        args = container["args"]
        self.assertEqual(args[args.index("--model-repository") + 1], "/mnt/models")


class DockerfileTest(unittest.TestCase):
    def test_runtime_packages_cover_the_binary(self):
        if shutil.which("dpkg") is None or shutil.which("ldd") is None:
            self.skipTest("needs dpkg and ldd")
        libs = re.findall(r"=> (/\S+)", subprocess.run(["ldd", SPINDLE], capture_output=True, text=True).stdout)
        needed = set()
        for lib in libs:
            p = subprocess.run(["dpkg", "-S", os.path.realpath(lib)], capture_output=True, text=True)
            if p.returncode == 0:
                needed.add(p.stdout.split(":")[0])
        # In every Debian image already.
        needed -= {"libc6", "libgcc-s1", "libstdc++6", "libudev1", "zlib1g", "libsystemd0"}
        installed = dockerfile().split("FROM debian:12-slim", 1)[1]
        for pkg in sorted(needed):
            self.assertRegex(installed, r"\b%s\b" % re.escape(pkg), "runtime image lacks %s" % pkg)

    def test_serve_command_line_starts(self):
        text = dockerfile()
        entry = json_array(text, "ENTRYPOINT")
        cmd = json_array(text, "CMD")
        self.assertEqual(entry[:2], ["/usr/local/bin/spindle", "serve"])
        args = entry[2:] + cmd
        with tempfile.TemporaryDirectory(prefix="spindle-deploy-test-") as work:
            os.makedirs(os.path.join(work, "repo"))
            args[args.index("--model-repository") + 1] = os.path.join(work, "repo")
            # Same flags; ephemeral ports on loopback.
            args[args.index("--host") + 1] = "127.0.0.1"
            args[args.index("--http-port") + 1] = "0"
            args[args.index("--grpc-port") + 1] = "0"
            proc = subprocess.Popen([SPINDLE, "serve", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            line = proc.stdout.readline()
            proc.send_signal(signal.SIGTERM)
            proc.communicate(timeout=60)
        self.assertRegex(line, r"listening on http://127\.0\.0\.1:\d+, gRPC on 127\.0\.0\.1:\d+")
        self.assertEqual(proc.returncode, 0)


if __name__ == "__main__":
    SPINDLE = sys.argv[1] if len(sys.argv) > 1 else SPINDLE
    unittest.main(argv=sys.argv[:1], verbosity=2)
