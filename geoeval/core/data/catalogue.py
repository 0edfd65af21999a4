"""The registry of the authors' public datasets (`DATASETS`): what each one holds, where its files
are published and how each file is checked (`DataFile`, `HubSource`, `Dataset`). Fetching and
the cache are `geoeval.core.data.fetch`.

Datasets (`DATASETS`):

- `maptab-sample`: the MapTab authors' public sample (Cleveland metro, Angkor Wat travel map: images,
  tables, the 12 RP test sets each, prompt templates), from their GitHub repository
  Ziqiao-Shang/MapTab, pinned to a commit; read by `env=maptab_authors`.
- `mapsatisfy-demo`: the MapSatisfyBench demo (MIT licence): `demo_bench.xlsx` and the recorded tool
  calls `mock_data/<tool>.csv`, from wanzw404/MapSatisfyBench, pinned to a commit, in the layout
  `env=mapsatisfy_demo` reads (the repository keeps them under `data/inputs/` and
  `data/sandbox/`). It is the copy geoeval's demo numbers are calibrated on: the repository also
  holds a `search_poi.csv` and a non-empty `ainative_kuake_search.csv` that this copy does not
  have (its `ainative_kuake_search.csv` is empty, which the replay store reads as no recordings,
  the same as a missing file), so neither is fetched.
- `maptab-full`: the full MapTab release the authors publish on the Hugging Face Hub
  (datasets/szq-nju/MapTab). Its file list and checksums are read from the Hub's tree API at fetch
  time (sha256 for LFS files, the git blob id for the others) and kept beside the files.

The static file lists below are `sha256 size path [remote path]` lines; every checksum is that of
the file as published at the pinned commit (and of the copies the conformance tests read).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from urllib.parse import quote

from geoeval.core.errors import GeoevalError


@dataclass(frozen=True)
class DataFile:
    """One file of a dataset: where it goes (`path`, relative to the dataset folder), where it is
    published (`url`) and how to check it: `sha256` and `size`, or (Hub files kept in git, not
    LFS) `git_sha1`, the git blob id."""

    path: str
    url: str
    size: int | None
    sha256: str | None = None
    git_sha1: str | None = None

    @property
    def checksum(self) -> str:
        return f"sha256:{self.sha256}" if self.sha256 else f"git-sha1:{self.git_sha1}"


@dataclass(frozen=True)
class HubSource:
    """A Hugging Face Hub repository whose files are listed (with checksums) at fetch time."""

    repo_id: str
    revision: str = "main"
    repo_type: str = "datasets"
    endpoint: str = "https://huggingface.co"

    def resolved_endpoint(self, url_base: str | None) -> str:
        return (url_base or os.environ.get("HF_ENDPOINT") or self.endpoint).rstrip("/")

    def tree_url(self, endpoint: str) -> str:
        return f"{endpoint}/api/{self.repo_type}/{self.repo_id}/tree/{quote(self.revision, safe='')}?recursive=true"

    def file_url(self, endpoint: str, path: str) -> str:
        return f"{endpoint}/{self.repo_type}/{self.repo_id}/resolve/{quote(self.revision, safe='')}/{quote(path)}"


@dataclass(frozen=True)
class Dataset:
    """A named dataset: its files (or the Hub repository that lists them), where it comes from,
    and which environment reads it (`env`, with `env_key` the config key to point at it)."""

    name: str
    description: str
    source: str
    licence: str
    env: str
    files: tuple[DataFile, ...] = ()
    hub: HubSource | None = None
    env_key: str = "env.root"
    url_base: str = ""

    @property
    def size(self) -> int | None:
        """Total bytes (None when the file list is only known at fetch time)."""
        if self.hub is not None:
            return None
        return sum(f.size or 0 for f in self.files)

    def fetch_command(self) -> str:
        return f"geoeval data fetch {self.name}"


def _parse_manifest(text: str, url_base: str) -> tuple[DataFile, ...]:
    """`sha256 size path [remote path]` lines -> files published at `url_base + remote path`."""
    files = []
    for line in text.strip().splitlines():
        sha256, size, path, *remote = line.split()
        files.append(
            DataFile(path=path, url=url_base + quote(remote[0] if remote else path), size=int(size), sha256=sha256)
        )
    return tuple(files)


_MAPTAB_SAMPLE_BASE = "https://raw.githubusercontent.com/Ziqiao-Shang/MapTab/a0a1a83f36dcd6cbb85249608ce497a748235bba/"
_MAPTAB_SAMPLE_FILES = """
    f63096a9f7fb6aeb4fb7dd75a5388e7f13755aacc8e2b10a6266ac7db501f5d6 870 metromap/data/test_set/metromap_shortest_path_query_map_and_tab_test_set.json
    74363e5017a61e2b9becd8481f451a6ebd1e4948961e090ae61b82073e57c15b 1046 metromap/data/test_set/metromap_shortest_path_query_map_and_tab_with_constraint_1_2_3_4_only_vertex2_test_set.json
    16a066d94004e095946e35a77624921cced0cb0796dff4daf4580bf6376e6d3b 1124 metromap/data/test_set/metromap_shortest_path_query_map_and_tab_with_constraint_1_2_3_4_test_set.json
    a15cb97542570766f5a6577a063b3af493eb5857126bcfa98147d3d6a2baa5eb 1108 metromap/data/test_set/metromap_shortest_path_query_map_and_tab_with_constraint_1_2_4_test_set.json
    b168e3abfcd497ae4e9ce9ddb36e548920c1bebba83a0156df63a3536ed336ae 1099 metromap/data/test_set/metromap_shortest_path_query_map_and_tab_with_constraint_1_3_4_test_set.json
    d816d81b5913e3b540422d0615d3f1a060c5c1b54927d763eafa0d4988bebbe4 1047 metromap/data/test_set/metromap_shortest_path_query_map_and_tab_with_constraint_1_test_set.json
    8774055a304fa1727b608f2d68f548069cbee7a9a61bf2b999f1da0cb7a1c4cc 1107 metromap/data/test_set/metromap_shortest_path_query_map_and_tab_with_constraint_2_3_4_test_set.json
    8ba11d8ae536ca2254f16b47bcee083b98b7743f494c132e4b4abca05f269b4d 1048 metromap/data/test_set/metromap_shortest_path_query_map_and_tab_with_constraint_2_test_set.json
    113bb65e779105e3394ab2706c92a72897a432289c164570030bc2d75883a7b1 1060 metromap/data/test_set/metromap_shortest_path_query_map_and_tab_with_constraint_3_test_set.json
    7a2e8cdde6b63f92e50016d597cf9f62e14a9785f89aeeea85a1aae0e7c5eee0 1054 metromap/data/test_set/metromap_shortest_path_query_map_and_tab_with_constraint_4_test_set.json
    955c90f4a31a2f75d6ed057597d5249ef0ce7fc32bb00bfd2731b55705c9fc3a 858 metromap/data/test_set/metromap_shortest_path_query_only_map_test_set.json
    8a18e33250a5f74ff9680df159e3072ad7ff8911942e713047558d8377572edd 854 metromap/data/test_set/metromap_shortest_path_query_only_tab_test_set.json
    433c106d475ac83f0aa2f9c52d34c3fd8964d25ba0d86623a63ae7ed1178cde6 18831 metromap/images/america/cleveland.png
    5fbb8a095fe28b455d556238c7b315e9acb89bd68e02ecf061a032f127f2c7ca 2381 metromap/prompts/metromap_10_qa_pic_and_tab_global.txt
    95cc35a0b6637db49cff25ffa416798d2bb2646e765a03c5f6686f491b47f361 1650 metromap/prompts/metromap_11_qa_pic_and_tab_part.txt
    d16d241dd1ab628f820bf35aba8d11aff4ca3e105a6d5061c31b512263b1e255 2190 metromap/prompts/metromap_12_qa_pic_and_tab_spatial_judge.txt
    bb992ad6d443086217c4c3d01113bcf8fa67eff7be9429366093c71d3f0ae10b 1923 metromap/prompts/metromap_1_qa_only_pic_global.txt
    7df3c3034101f44daf6861a62ae8387064a7d6dc68d29cb13b4d09c588a97f17 1520 metromap/prompts/metromap_2_qa_only_pic_part.txt
    ba2368ba17f117b3395e71585e690bab9fe5b3d66453a2333e570ced1950a672 1262 metromap/prompts/metromap_3_qa_only_pic_spatial_judge.txt
    7c37148882c59e8b5d7b47afaf50c2838bcae4787de04a7b662d05ca68cd425e 1566 metromap/prompts/metromap_4_qa_edge_tab_global.txt
    6517eae148383c12fd39403257b146a014d193167d47db43b8810a030feb1280 1450 metromap/prompts/metromap_5_qa_edge_tab_part.txt
    dba06e4ca81c974fe52f5de4621479620809e385d1c1bddc3066bb8e627a2ab8 1530 metromap/prompts/metromap_6_qa_edge_tab_spatial_judge.txt
    d28370cc275788fc40bbe4a2bf5189f67af7a43fdc63860d1080b87f369fdd8d 1257 metromap/prompts/metromap_7_qa_vertex_tab_global.txt
    a1fb7fc077acfa93a802a79cd22d337f49020493ad4427034fbdc0ef3b4913c4 1267 metromap/prompts/metromap_8_qa_vertex_tab_part.txt
    c7c2c95537291b707d52e9e6677dcfa0b481c05de84a169c6e48746b3bf31677 1227 metromap/prompts/metromap_9_qa_vertex_tab_spatial_judge.txt
    bfb64b0122b36d607f35f28ded79cbcec3a8c7ce481d9cbdeb0fd098afe59f5b 1725 metromap/prompts/metromap_shortest_path_map_and_tab.txt
    9d39554c89d3f6c6dc200ebf3cae7a0fc293cdef0b0f1d5c84c2d1aebee32a57 1674 metromap/prompts/metromap_shortest_path_only_map.txt
    827c33e9d00e05efb570a64c4758bf344e8ddef589fa10a0c50e449fa3b94c82 1683 metromap/prompts/metromap_shortest_path_only_tab.txt
    2dc0d8cd1379aa48eb598f8c071a2a66146205cfd87834771f3848a08356e04a 3155 metromap/prompts/metromap_shortest_path_with_constraint_1.txt
    b578a19ee1a2f2ae08c35e0814106e869316791390dd9c8463e91207cdcdba6e 4032 metromap/prompts/metromap_shortest_path_with_constraint_1_2_3_4.txt
    62e42b490475ae40fc0ad8e9f77da4b3aaab532d183368607a2ff62d0c059118 3737 metromap/prompts/metromap_shortest_path_with_constraint_1_2_3_4_only_vertex2.txt
    74a572a46430ef50ca8afd0b8f8b42ac8e8bef89f9626b2cf88b02a74fa4b48a 3926 metromap/prompts/metromap_shortest_path_with_constraint_1_2_4.txt
    5c097c7822fd2c5953d4519eec42bae65d2c1234898d02372bc549966336c9a1 3829 metromap/prompts/metromap_shortest_path_with_constraint_1_3_4.txt
    83171519b7a1e2bc792a4055b4646a8e397b1620cb73a4400e7b4f08bf055707 2389 metromap/prompts/metromap_shortest_path_with_constraint_2.txt
    0f238fde8bf768cf8d1974e5af232478e8e7b5690b4e15a1c4ee3cd2b424d774 3354 metromap/prompts/metromap_shortest_path_with_constraint_2_3_4.txt
    4bb612ec2aaf6e60d80cc07ff4d9541e93dfc758cce446c341389eedb2f5cc64 3055 metromap/prompts/metromap_shortest_path_with_constraint_3.txt
    ea520863aa49bcedfc28c62d73ebb2306e6de9ba58e50bbf94d5c0e766cddcc7 2693 metromap/prompts/metromap_shortest_path_with_constraint_4.txt
    1b4682535be659675715bea6b5925303ecdc9e569d58686f69d1a3b2c67697c0 6472 metromap/prompts/metromap_shortest_path_with_qa_and_constraint_1.txt
    dbb1f7b4b8047b54063efa1d7fd080c13f6cb1caa3e0db4cb0c7336d903c68b6 7468 metromap/prompts/metromap_shortest_path_with_qa_and_constraint_1_2_3_4.txt
    08efc4589d949836919ac4b73c49f20f883033e3900a63aba40c93e4da30bb6b 7267 metromap/prompts/metromap_shortest_path_with_qa_and_constraint_1_2_4.txt
    ad04b31bce2de67e700d42d217f74d63b08770085d6297d8b4311ff60e988cd1 7254 metromap/prompts/metromap_shortest_path_with_qa_and_constraint_1_3_4.txt
    313347829764e8db9a278531738e4d9873f0994a2c594d87783def2daa315bd3 5726 metromap/prompts/metromap_shortest_path_with_qa_and_constraint_2.txt
    f5809295d7e0624f6b6f7c014c01da490162eb26536c3726543cd765f88f42b6 6668 metromap/prompts/metromap_shortest_path_with_qa_and_constraint_2_3_4.txt
    6681e926ade5bfef57caeaebb5391144f760800b521c70169b79593c70a7aadd 6388 metromap/prompts/metromap_shortest_path_with_qa_and_constraint_3.txt
    ca30a732df90c3af1ee8553bbab5d58968f1bf4f776049bea0bce99ca6e8ff4e 6022 metromap/prompts/metromap_shortest_path_with_qa_and_constraint_4.txt
    e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 0 metromap/qa_data/.gitkeep
    77251d00629c0f51330952d2d5696dba4facb74082a916474cccead8134d9ac8 1028 metromap/tabulars/america/cleveland_edge.csv
    66290c7e906348c09c65b43bb5f5d8e385a983564ec89b83b337ecb82a7c4b29 3071 metromap/tabulars/america/cleveland_edge.json
    c795a06b5e47a6e36aab68b82523afec13a8a6d5f3b335a927c3299fd4ae7ecd 858 metromap/tabulars/america/cleveland_vertex.csv
    5483d9baa61929d2502b2edd601d29ca7604bfc8901e22f8d3e4ccf5a0f584dd 3440 metromap/tabulars/america/cleveland_vertex.json
    ea366deae59e94ccbbcdcf2fdcbab7ec8ee7d0f616efcef49eba1416a3cfc705 755 travelmap/data/test_set/travelmap_shortest_path_query_map_and_tab_test_set.json
    18cf1f8a57c9534f2f8c43aa208e753a8e292270768033651be848098bc60986 986 travelmap/data/test_set/travelmap_shortest_path_query_map_and_tab_with_constraint_1_2_3_4_only_vertex2_test_set.json
    14dda9ffbc8a98fb22faf275272a9948df895e8cb69d654862c61b71908fedcb 1069 travelmap/data/test_set/travelmap_shortest_path_query_map_and_tab_with_constraint_1_2_3_4_test_set.json
    366eaecb6724e957d1a2f6d3af6ee65fcc8d9c8937b248441c294de5b09746a1 1037 travelmap/data/test_set/travelmap_shortest_path_query_map_and_tab_with_constraint_1_2_4_test_set.json
    13953ba2f2810d61d75599007ac150417131e514ae0c2487a6e7ec1860304433 1044 travelmap/data/test_set/travelmap_shortest_path_query_map_and_tab_with_constraint_1_3_4_test_set.json
    6cdd4eeebadc8ef44399e7eb2ac55bde9ba601ab98074b5322b3b2159ce475c5 1002 travelmap/data/test_set/travelmap_shortest_path_query_map_and_tab_with_constraint_1_test_set.json
    fc466eeac164ecbca3d60c64efdab4c0a67a5bd1df6b723f6c64476a5bac8221 1033 travelmap/data/test_set/travelmap_shortest_path_query_map_and_tab_with_constraint_2_3_4_test_set.json
    19a9f772209d1bea37e1feb45558aee4d01d5535142e8cc0be630902d3054a2d 998 travelmap/data/test_set/travelmap_shortest_path_query_map_and_tab_with_constraint_2_test_set.json
    e88bc1c74edd8035110d68ed0479b1e1d1b04141bb5715cc562f1a95eea07832 992 travelmap/data/test_set/travelmap_shortest_path_query_map_and_tab_with_constraint_3_test_set.json
    d2ae4b7b493c7bf35f79ade070fb3d80402b3f912f88fe7d909e53aa174125db 998 travelmap/data/test_set/travelmap_shortest_path_query_map_and_tab_with_constraint_4_test_set.json
    acd165c6817f96d8557beb5a35546b85059f1f69f7c00dd581b7b22c574b038e 743 travelmap/data/test_set/travelmap_shortest_path_query_only_map_test_set.json
    0b1c34e615b5a387e520472e4358535445bd50c4fd9aa1cf316dd36ba791b71c 725 travelmap/data/test_set/travelmap_shortest_path_query_only_tab_test_set.json
    94e44f375fc270f13da8fb136a58ed755387390408d3868a4670b29983461a7b 865558 travelmap/images/cambodia/angkorWar.png
    938f64bb2d23b1c0b72e239a95de272fbac5c190078d0219ea9119c5fd9ec527 1164 travelmap/prompts/travelmap_shortest_path_map_and_tab.txt
    87222f1fe7c3e133182d51f6c7e84c0cf4fbc4d80a4a4f62d0350c5985f1b13f 1113 travelmap/prompts/travelmap_shortest_path_only_map.txt
    d2ce79f6483d2c2ff986d939c203207f4c31fe84362964bdeeba560b87d1afd9 1120 travelmap/prompts/travelmap_shortest_path_only_tab.txt
    94a231bf378c55d125ea0d34a8cc7336d2ef85566de85e7410c95f03ce6d4808 1995 travelmap/prompts/travelmap_shortest_path_with_constraint_1.txt
    ea4c20fb55f7a253948665533d60178fd552617e834516aec42b1cf34c96f4a6 3167 travelmap/prompts/travelmap_shortest_path_with_constraint_1_2_3_4.txt
    67a54030384e1e31e90333ca3048709a444766f9f576f9bbadc554191cf056d5 2846 travelmap/prompts/travelmap_shortest_path_with_constraint_1_2_3_4_only_vertex2.txt
    7689399ba3aa161e8179950017f4859d9fe770f080cdec26a7d5375a60781ae6 2930 travelmap/prompts/travelmap_shortest_path_with_constraint_1_2_4.txt
    fd33155b2efd4b023f961807687fe7fe78c00bf33a13bdc48137438c38e253f8 2791 travelmap/prompts/travelmap_shortest_path_with_constraint_1_3_4.txt
    d0aafb8c2751979afbad59bdf231d9dda3001e2ef76ad595efb6fb942d0d498e 2546 travelmap/prompts/travelmap_shortest_path_with_constraint_2.txt
    e587aac16fdcc8a0c4dcfc04153dae74b115defda9b5819c2584ad6a1dfa6358 3301 travelmap/prompts/travelmap_shortest_path_with_constraint_2_3_4.txt
    fa108a98595b934a7f0b35f38bbd9b5aa62dcc3ea33b84ce6069be898afb1bd3 2173 travelmap/prompts/travelmap_shortest_path_with_constraint_3.txt
    774b86c19ea2edd8bfa03da617ada42e6ea439f4216baab0e6703eabd0a7a85e 2180 travelmap/prompts/travelmap_shortest_path_with_constraint_4.txt
    d1a678a53e8e48e23bcea65d9f149ae6bb3ada2ec4861808b5e0eec759b6e260 5970 travelmap/prompts/travelmap_shortest_path_with_qa_and_constraint_1.txt
    6c3555dbaf9bd522a9e95b53ea3aec5fe555e4921117112c8071d419deab491d 7149 travelmap/prompts/travelmap_shortest_path_with_qa_and_constraint_1_2_3_4.txt
    96b588dc0e297ecba7f72583062b5b2cba519d1940cc7c6d70bebbf274809f75 6910 travelmap/prompts/travelmap_shortest_path_with_qa_and_constraint_1_2_4.txt
    b7ffaafe6f86f8be58ee2d703230019093ba75fec2cf13b81b58477da1c5ade7 6771 travelmap/prompts/travelmap_shortest_path_with_qa_and_constraint_1_3_4.txt
    69783a1bbfa158607bb020fb21db614680c576640900ed60e0057bc80f42a72f 6526 travelmap/prompts/travelmap_shortest_path_with_qa_and_constraint_2.txt
    4f1dc07d97074171905d9fe0dbc95a42bf59c63c3eadef0108aaed7ec1d29b6b 6548 travelmap/prompts/travelmap_shortest_path_with_qa_and_constraint_2_3_4.txt
    8c135d1a630494b2ee7affe6a134074e4a5f3a2e6a4ab6d27e840fddd9f9e3b4 6153 travelmap/prompts/travelmap_shortest_path_with_qa_and_constraint_3.txt
    145bf97d6d1a85690d8711ffaabf9b6fa1c2fd8e920e382e80e2b7714d1ba097 6160 travelmap/prompts/travelmap_shortest_path_with_qa_and_constraint_4.txt
    e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 0 travelmap/qa_data/.gitkeep
    ebc6387da4f6ce2c5bad69a824d2f1f663d936140869b159719e319f3c02994c 1258 travelmap/tabulars/cambodia/angkorWar_edge.csv
    64f7667a96aa0606e590ed0a5eb5a31a690eb142d2971168e93095f42b832802 4002 travelmap/tabulars/cambodia/angkorWar_edge.json
    2eb7579a00e522f46c925149620cfbc5af082b9655f8a4b5407c7039f09e9f8a 840 travelmap/tabulars/cambodia/angkorWar_vertex.csv
    b603aece3bc4ac27ea85877778310e1374ccc76942085028293cefaec9fa2a6a 3346 travelmap/tabulars/cambodia/angkorWar_vertex.json
"""

_MAPSATISFY_DEMO_BASE = (
    "https://raw.githubusercontent.com/wanzw404/MapSatisfyBench/7ec4455b0755b140d0f49071b33d7114aa1e7cc4/"
)
_MAPSATISFY_DEMO_FILES = """
    0d7af2c9a755ca332fe397a78976b3d552582c66e810147f655a4232a5414d94 1065 LICENSE
    c4e7c908728b2f12fa97c1a251a2fe29844765d0bfe337266baa0974e97aa555 30864 demo_bench.xlsx data/inputs/demo_bench.xlsx
    893d4bc449eeaf550d6f4c6ee7cb95ec59d9b7e58f82313e3359e2d81d69d76a 3088 mock_data/fuel_payment.csv data/sandbox/mock_data/fuel_payment.csv
    07abbef7e4da87c7de6dd2a0c5aeddc1d76d3e29da6bac245a2922e3b7a859ba 681932 mock_data/get_navigation.csv data/sandbox/mock_data/get_navigation.csv
    980dbddea4475318cd5d78e95071952a7586f227e7855303d32763d747df9ab5 22503 mock_data/get_rgeo.csv data/sandbox/mock_data/get_rgeo.csv
    56440bccbc298219af5896f948e21384659380a91a4636bfddce078e66bbcd23 166 mock_data/get_route_traffic_info.csv data/sandbox/mock_data/get_route_traffic_info.csv
    1821f77b44bb0f96ef14d7279160fecb057d13a4c360c76e4c0db46f42345e76 263314 mock_data/get_sequential_navigation.csv data/sandbox/mock_data/get_sequential_navigation.csv
    5dd01e41fe52ca3fb7d5376270a52c39a0f9ff4ea872b484b84cded7535784eb 1189 mock_data/get_taxi_route_plan.csv data/sandbox/mock_data/get_taxi_route_plan.csv
    b056ad4f828b431a787bc9146795af46ec6dcf8b99a1bb36b00bc90f53f7d239 25465 mock_data/get_weather.csv data/sandbox/mock_data/get_weather.csv
    ebcf378070a7ad78624c1859ef95f0750029cf70d81df011d8571bb73e0c7811 46144 mock_data/optimize_visit_order.csv data/sandbox/mock_data/optimize_visit_order.csv
    7a8e6f47c9fa676aec2baf3eb19a98c35395ba9136515025cce62d3552911d17 68044 mock_data/restaurant_group_buy.csv data/sandbox/mock_data/restaurant_group_buy.csv
    1452a0552c9a5a20aac5632de6353ac4267d2131f9bb8c1decc9f8d5562cf514 157628 mock_data/restaurant_reservation.csv data/sandbox/mock_data/restaurant_reservation.csv
    d21a261bc9a934eedba5efadbadb997075f58fd62b1c442b19315564fc9bbe58 652857 mock_data/route_station_info.csv data/sandbox/mock_data/route_station_info.csv
    b2dbe98e0261773987b2c6021e1a971fb47b67395efeed866525f46dfbd14d69 4018237 mock_data/search_around_poi.csv data/sandbox/mock_data/search_around_poi.csv
    74d9aa832b61f657112aadcaa0a425ae1978b492e1328e905a461f5afc495b67 1254115 mock_data/search_poi_along_route.csv data/sandbox/mock_data/search_poi_along_route.csv
    98035d1261a152d2d779ff23123cdd0dd66e0cb303244f300f7eddc140b83d56 222150 mock_data/search_poi_around_multipoints.csv data/sandbox/mock_data/search_poi_around_multipoints.csv
    1da6ce1df297a058ac91cea34d414fe33afe905e96d881dd736f3394bc35c71f 1148 mock_data/search_products_by_poiid.csv data/sandbox/mock_data/search_products_by_poiid.csv
    e61c777830b421603c64ad9e16f169a56f4a7b9b66861fa1f5310482b26a3970 22024 mock_data/search_train_or_flights_tickets.csv data/sandbox/mock_data/search_train_or_flights_tickets.csv
    2747ef387a9030edf3b33f3c5f1a2809efb67d69fafd224971815d108b3dae89 91248 mock_data/search_user_action_summary.csv data/sandbox/mock_data/search_user_action_summary.csv
    65f4c02a1042a29c083ef6a6a59a8cfff2c73775b2dee9638fd5ba231b53ce0e 38056 mock_data/search_user_profile.csv data/sandbox/mock_data/search_user_profile.csv
"""

DATASETS: dict[str, Dataset] = {
    dataset.name: dataset
    for dataset in (
        Dataset(
            name="maptab-sample",
            description="MapTab public sample: Cleveland metro + Angkor Wat travel map, 12 RP test sets each",
            source="github.com/Ziqiao-Shang/MapTab @ a0a1a83",
            licence="see the repository",
            env="env=maptab_authors (+experiment=maptab_authors_sample)",
            files=_parse_manifest(_MAPTAB_SAMPLE_FILES, _MAPTAB_SAMPLE_BASE),
            url_base=_MAPTAB_SAMPLE_BASE,
        ),
        Dataset(
            name="mapsatisfy-demo",
            description="MapSatisfyBench demo: 10 instances (demo_bench.xlsx) + recorded tool calls (mock_data/)",
            source="github.com/wanzw404/MapSatisfyBench @ 7ec4455",
            licence="MIT",
            env="env=mapsatisfy_demo (+experiment=mapsatisfy_demo)",
            files=_parse_manifest(_MAPSATISFY_DEMO_FILES, _MAPSATISFY_DEMO_BASE),
            url_base=_MAPSATISFY_DEMO_BASE,
        ),
        Dataset(
            name="maptab-full",
            description="MapTab full release (all maps, test/training sets, QA data), file list from the Hub",
            source="huggingface.co/datasets/szq-nju/MapTab @ main",
            licence="see the dataset card",
            env="env=maptab_authors env.root=<this folder>",
            hub=HubSource(repo_id="szq-nju/MapTab"),
        ),
    )
}


def dataset_names() -> list[str]:
    return list(DATASETS)


def get_dataset(name: str) -> Dataset:
    """The dataset called `name` (`maptab_sample` works as well as `maptab-sample`)."""
    dataset = DATASETS.get(name.strip().lower().replace("_", "-"))
    if dataset is None:
        raise GeoevalError(f"unknown dataset {name!r}: choose one of {', '.join(DATASETS)} (see `geoeval data list`)")
    return dataset
