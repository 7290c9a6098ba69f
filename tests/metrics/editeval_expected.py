"""What EditEval's own code gives on tests/metrics/data/editeval_cases.json, under editlab's metric names
(exact_match is EditEval's `em`, update_rouge its `update_rougeLsum`; a corpus's update_rouge is EditEval's
computation with the mean of the examples in place of its unseeded bootstrap median, whose values for numpy
seeds 0-4 are in the comments). Generated, not written by hand:

    EDITEVAL=/tmp/editeval-src BLEU_SCRIPT=/tmp/editeval-metrics/bleu/bleu.py HF_DATASETS_OFFLINE=1 \
        /tmp/editeval-venv/bin/python tests/metrics/editeval_reference.py \
        tests/metrics/data/editeval_cases.json > /tmp/expected.json
    python tests/metrics/editeval_reference.py --as-python /tmp/expected.json

(the venv, EditEval's checkout and the bleu script as tests/metrics/editeval_reference.py describes).
"""

from typing import NamedTuple


class Undefined(NamedTuple):
    """EditEval's code raised this exception instead of giving a figure."""

    error: str


# fmt: off
EXPECTED = {
    'jfleg_like': {
        # EditEval's own update_rouge (bootstrap median), numpy seeds 0-4: 0.7650230695500295, 0.7659077702245989, 0.7610827307644883, 0.762797609013695, 0.765187023683134
        'corpus': {'sari': 68.84124544225834, 'gleu': 0.6095776008886, 'ibleu': 0.7899736855739061, 'exact_match': 0.6, 'em_diff': 0.7966666666666666, 'update_rouge': 0.7577267294661261},
        'examples': [
            {'sari': 90.89175143741708, 'gleu': 0.8772026618563802, 'ibleu': 0.8649156030436131, 'exact_match': 1.0, 'em_diff': 1.0, 'update_rouge': 0.95},
            {'sari': 80.48745818804072, 'gleu': 0.6877992349941837, 'ibleu': 0.860926197505475, 'exact_match': 1.0, 'em_diff': 1.0, 'update_rouge': 0.9044729344729344},
            {'sari': 19.656838052924787, 'gleu': 0.0, 'ibleu': 0.5202932078662394, 'exact_match': 0.0, 'em_diff': 0.0, 'update_rouge': 0.0},
            {'sari': 59.824152455731415, 'gleu': 0.268, 'ibleu': 0.8331259695023578, 'exact_match': 1.0, 'em_diff': 1.0, 'update_rouge': 0.8},
            {'sari': 67.45982870624243, 'gleu': 0.5708510893425919, 'ibleu': 0.8728565335229366, 'exact_match': 0.0, 'em_diff': 0.8, 'update_rouge': 0.8359683794466403},
            {'sari': 71.93507587215858, 'gleu': 0.5314441739675341, 'ibleu': 0.8332721431205394, 'exact_match': 1.0, 'em_diff': 1.0, 'update_rouge': 0.899981460882462},
            {'sari': 39.2506105006105, 'gleu': 0.4837554100243951, 'ibleu': 0.48975876595167034, 'exact_match': 0.0, 'em_diff': 0.5, 'update_rouge': 0.39522058823529416},
            {'sari': 75.20974424931785, 'gleu': 0.5943440276519534, 'ibleu': 0.8310069787444452, 'exact_match': 1.0, 'em_diff': 1.0, 'update_rouge': 0.9555555555555556},
            {'sari': 72.89928869393857, 'gleu': 0.6003445560077166, 'ibleu': 0.8671429795520224, 'exact_match': 0.0, 'em_diff': 0.6666666666666666, 'update_rouge': 0.893846153846154},
            {'sari': 84.1011510054359, 'gleu': 0.7864796584103179, 'ibleu': 0.8517588980049049, 'exact_match': 1.0, 'em_diff': 1.0, 'update_rouge': 0.9422222222222222},
        ],
    },
    'asset_like': {
        # EditEval's own update_rouge (bootstrap median), numpy seeds 0-4: 0.6357264318778185, 0.6330551962963694, 0.6338332748260594, 0.6395907544151193, 0.6364960795920603
        'corpus': {'sari': 60.088647640243664, 'gleu': 0.36684628749462994, 'ibleu': 0.6611615011597084, 'exact_match': 0.125, 'em_diff': 0.4708333333333333, 'update_rouge': 0.628804884828937},
        'examples': [
            {'sari': 64.53429039099542, 'gleu': 0.4796345725098038, 'ibleu': 0.8250853655854823, 'exact_match': 0.0, 'em_diff': 0.6666666666666666, 'update_rouge': 0.8300300300300302},
            {'sari': 62.551264320532376, 'gleu': 0.2908536742495049, 'ibleu': 0.6725649897917149, 'exact_match': 0.0, 'em_diff': 0.5, 'update_rouge': 0.7170242679870408},
            {'sari': 73.9412270547113, 'gleu': 0.3, 'ibleu': 0.8718376379298839, 'exact_match': 1.0, 'em_diff': 1.0, 'update_rouge': 0.8076140656785817},
            {'sari': 12.642961281126233, 'gleu': 0.0, 'ibleu': 0.1405542968560249, 'exact_match': 0.0, 'em_diff': 0.0, 'update_rouge': 0.0},
            {'sari': 62.43731249467385, 'gleu': 0.3714544518296396, 'ibleu': 0.840666451149924, 'exact_match': 0.0, 'em_diff': 0.5, 'update_rouge': 0.76635626211178},
            {'sari': 38.434296939749686, 'gleu': 0.0, 'ibleu': 0.0, 'exact_match': 0.0, 'em_diff': 0.0, 'update_rouge': 0.40649053463698775},
            {'sari': 67.85854656525449, 'gleu': 0.3852555013319449, 'ibleu': 0.6780336506460973, 'exact_match': 0.0, 'em_diff': 0.5, 'update_rouge': 0.7081453634085214},
            {'sari': 71.19197885948591, 'gleu': 0.5435240259482877, 'ibleu': 0.9, 'exact_match': 0.0, 'em_diff': 0.6, 'update_rouge': 0.7947785547785547},
        ],
    },
    'edge': {
        # EditEval's own update_rouge (bootstrap median), numpy seeds 0-4: 0.5369444444444444, 0.5369444444444444, 0.5366269841269842, 0.5353968253968254, 0.5356944444444445
        'corpus': {'sari': 54.87292278294671, 'gleu': 0.44163711628776403, 'ibleu': 0.6485489757409133, 'exact_match': 0.6, 'em_diff': 0.475, 'update_rouge': 0.5373412698412698},
        'examples': [
            {'sari': 24.242424242424246, 'gleu': 0.0, 'ibleu': Undefined('ZeroDivisionError'), 'exact_match': 0.0, 'em_diff': 0.0, 'update_rouge': 0.0},
            {'sari': 26.16452991452991, 'gleu': 0.0, 'ibleu': 0.4791129957446856, 'exact_match': 0.0, 'em_diff': 0.0, 'update_rouge': 0.0},
            {'sari': 88.88888888888887, 'gleu': 0.8053285507517759, 'ibleu': 0.8356541115839239, 'exact_match': 1.0, 'em_diff': 1.0, 'update_rouge': 0.9166666666666667},
            {'sari': 21.031746031746035, 'gleu': 0.0, 'ibleu': 0.0, 'exact_match': 0.0, 'em_diff': 0.0, 'update_rouge': 0.0},
            {'sari': 14.444444444444443, 'gleu': 0.0, 'ibleu': 0.0, 'exact_match': 0.0, 'em_diff': 0.0, 'update_rouge': 0.5},
            {'sari': 47.261904761904766, 'gleu': 0.0, 'ibleu': 0.0, 'exact_match': 0.0, 'em_diff': 0.0, 'update_rouge': 0.7857142857142858},
            {'sari': 72.02137045487429, 'gleu': 0.6414388100955477, 'ibleu': 0.8571118057519647, 'exact_match': 1.0, 'em_diff': 1.0, 'update_rouge': 0.9166666666666667},
            {'sari': 55.34391534391534, 'gleu': 0.546, 'ibleu': 0.8451188363905974, 'exact_match': 1.0, 'em_diff': 1.0, 'update_rouge': 1.0},
            {'sari': 25.982042648709314, 'gleu': 0.454, 'ibleu': 0.8, 'exact_match': 1.0, 'em_diff': 0.0, 'update_rouge': 0.5},
            {'sari': 49.671778838445505, 'gleu': 0.19559444701653514, 'ibleu': 0.16249482585433836, 'exact_match': 0.0, 'em_diff': 0.0, 'update_rouge': 1.0},
            {'sari': 13.888888888888888, 'gleu': 0.0, 'ibleu': 0.0, 'exact_match': 1.0, 'em_diff': 1.0, 'update_rouge': 0.0},
            {'sari': 79.90379990379991, 'gleu': 0.454, 'ibleu': 0.8452481746493055, 'exact_match': 1.0, 'em_diff': 1.0, 'update_rouge': 0.0},
            {'sari': 28.49320953558309, 'gleu': 0.32102647865869255, 'ibleu': 0.565685424949238, 'exact_match': 0.0, 'em_diff': 0.5, 'update_rouge': 0.43333333333333335},
            {'sari': 62.22222222222222, 'gleu': 0.454, 'ibleu': 0.9, 'exact_match': 1.0, 'em_diff': 1.0, 'update_rouge': 0.5},
            {'sari': 31.53968253968254, 'gleu': 0.454, 'ibleu': 0.8, 'exact_match': 1.0, 'em_diff': 1.0, 'update_rouge': 0.9444444444444444},
            {'sari': 27.259816207184624, 'gleu': 0.454, 'ibleu': 0.8, 'exact_match': 1.0, 'em_diff': 0.0, 'update_rouge': 0.5},
            {'sari': 24.86111111111111, 'gleu': 0.454, 'ibleu': 0.8298312060872264, 'exact_match': 1.0, 'em_diff': 1.0, 'update_rouge': 1.0},
            {'sari': 20.4763148728666, 'gleu': 0.0, 'ibleu': 0.46839971346146336, 'exact_match': 0.0, 'em_diff': 0.0, 'update_rouge': 0.0},
            {'sari': 18.253968253968253, 'gleu': 0.0, 'ibleu': Undefined('ZeroDivisionError'), 'exact_match': 1.0, 'em_diff': 1.0, 'update_rouge': 0.75},
            {'sari': 25.0, 'gleu': 0.0, 'ibleu': 0.0, 'exact_match': 1.0, 'em_diff': 0.0, 'update_rouge': 1.0},
        ],
    },
    'all_short': {
        # EditEval's own update_rouge (bootstrap median), numpy seeds 0-4: 0.42857142857142855, 0.42857142857142855, 0.42857142857142855, 0.42857142857142855, 0.42857142857142855
        'corpus': {'sari': 40.888888888888886, 'gleu': 0.0, 'ibleu': 0.0, 'exact_match': 0.0, 'em_diff': 0.0, 'update_rouge': 0.42857142857142855},
        'examples': [
            {'sari': 21.031746031746035, 'gleu': 0.0, 'ibleu': 0.0, 'exact_match': 0.0, 'em_diff': 0.0, 'update_rouge': 0.0},
            {'sari': 14.444444444444443, 'gleu': 0.0, 'ibleu': 0.0, 'exact_match': 0.0, 'em_diff': 0.0, 'update_rouge': 0.5},
            {'sari': 47.261904761904766, 'gleu': 0.0, 'ibleu': 0.0, 'exact_match': 0.0, 'em_diff': 0.0, 'update_rouge': 0.7857142857142858},
        ],
    },
    'all_empty_outputs': {
        # EditEval's own update_rouge (bootstrap median), numpy seeds 0-4: 0.0, 0.0, 0.0, 0.0, 0.0
        'corpus': {'sari': 24.242424242424246, 'gleu': 0.0, 'ibleu': Undefined('ZeroDivisionError'), 'exact_match': 0.0, 'em_diff': 0.0, 'update_rouge': 0.0},
        'examples': [
            {'sari': 25.0, 'gleu': 0.0, 'ibleu': Undefined('ZeroDivisionError'), 'exact_match': 0.0, 'em_diff': 0.0, 'update_rouge': 0.0},
            {'sari': 23.333333333333332, 'gleu': 0.0, 'ibleu': Undefined('ZeroDivisionError'), 'exact_match': 0.0, 'em_diff': 0.0, 'update_rouge': 0.0},
        ],
    },
    'update_like': {
        # EditEval's own update_rouge (bootstrap median), numpy seeds 0-4: 0.5064935064935064, 0.5013241660300484, 0.49607843137254903, 0.5013241660300484, 0.5056022408963585
        'corpus': {'sari': 65.35977027653372, 'gleu': 0.6494282092123367, 'ibleu': 0.6217302179453478, 'exact_match': 0.4, 'em_diff': 0.2, 'update_rouge': 0.5013241660300484},
        'examples': [
            {'sari': 40.59799677446736, 'gleu': 0.6645686362071729, 'ibleu': 0.6228367725513272, 'exact_match': 0.0, 'em_diff': 0.0, 'update_rouge': 0.487012987012987},
            {'sari': 33.333333333333336, 'gleu': 0.8321621867149108, 'ibleu': 0.8, 'exact_match': 1.0, 'em_diff': 0.0, 'update_rouge': 0.5},
            {'sari': 45.02611585944919, 'gleu': 0.46941579817932627, 'ibleu': 0.4820394560747241, 'exact_match': 0.0, 'em_diff': 0.0, 'update_rouge': 0.35294117647058826},
            {'sari': 75.65731379934931, 'gleu': 0.7536821960874144, 'ibleu': 0.817348318162062, 'exact_match': 1.0, 'em_diff': 1.0, 'update_rouge': 0.8333333333333333},
            {'sari': 37.82509287624377, 'gleu': 0.2472111196147289, 'ibleu': 0.45507848466143674, 'exact_match': 0.0, 'em_diff': 0.0, 'update_rouge': 0.3333333333333333},
        ],
    },
    'fewer_golds_later': {
        # EditEval's own update_rouge (bootstrap median), numpy seeds 0-4: Undefined('IndexError'), Undefined('IndexError'), Undefined('IndexError'), Undefined('IndexError'), Undefined('IndexError')
        'corpus': {'sari': 80.55555555555556, 'gleu': Undefined('IndexError'), 'ibleu': 0.9, 'exact_match': 1.0, 'em_diff': 1.0, 'update_rouge': Undefined('IndexError')},
        'examples': [
            {'sari': 72.77777777777779, 'gleu': 0.3, 'ibleu': 0.9, 'exact_match': 1.0, 'em_diff': 1.0, 'update_rouge': 0.8055555555555555},
            {'sari': 72.22222222222221, 'gleu': 0.454, 'ibleu': 0.9, 'exact_match': 1.0, 'em_diff': 1.0, 'update_rouge': 0.8333333333333333},
        ],
    },
    'more_golds_later': {
        # EditEval's own update_rouge (bootstrap median), numpy seeds 0-4: 0.9166666666666666, 0.9166666666666666, 0.9166666666666666, 0.9166666666666666, 0.9166666666666666
        'corpus': {'sari': 88.88888888888887, 'gleu': 0.8205322216823981, 'ibleu': 0.8602364635616475, 'exact_match': 1.0, 'em_diff': 1.0, 'update_rouge': 0.9166666666666666},
        'examples': [
            {'sari': 91.66666666666667, 'gleu': 1.0, 'ibleu': 0.9, 'exact_match': 1.0, 'em_diff': 1.0, 'update_rouge': 1.0},
            {'sari': 70.28174603174602, 'gleu': 0.36, 'ibleu': 0.9, 'exact_match': 1.0, 'em_diff': 1.0, 'update_rouge': 0.5833333333333334},
            {'sari': 73.71484266221108, 'gleu': 0.454, 'ibleu': 0.846271503408823, 'exact_match': 1.0, 'em_diff': 1.0, 'update_rouge': 0.9000000000000001},
        ],
    },
    'editeval_sari_fixture': {
        # EditEval's own update_rouge (bootstrap median), numpy seeds 0-4: 0.39898989898989895, 0.39898989898989895, 0.39898989898989895, 0.39898989898989895, 0.39898989898989895
        'corpus': {'sari': 31.350246975246975, 'gleu': 0.0, 'ibleu': 0.0, 'exact_match': 0.0, 'em_diff': 0.0, 'update_rouge': 0.39898989898989895},
        'examples': [
            {'sari': 31.350246975246975, 'gleu': 0.0, 'ibleu': 0.0, 'exact_match': 0.0, 'em_diff': 0.0, 'update_rouge': 0.39898989898989895},
        ],
    },
    'editeval_gleu_fixture': {
        # EditEval's own update_rouge (bootstrap median), numpy seeds 0-4: 0.5681818181818182, 0.5681818181818182, 0.5681818181818182, 0.5681818181818182, 0.5681818181818182
        'corpus': {'sari': 51.15287930321892, 'gleu': 0.16862916847443368, 'ibleu': 0.4859800812850314, 'exact_match': 0.5, 'em_diff': 0.5, 'update_rouge': 0.5681818181818182},
        'examples': [
            {'sari': 67.36422997292563, 'gleu': 0.3, 'ibleu': 0.8356541115839239, 'exact_match': 1.0, 'em_diff': 1.0, 'update_rouge': 0.7373737373737373},
            {'sari': 31.350246975246975, 'gleu': 0.0, 'ibleu': 0.0, 'exact_match': 0.0, 'em_diff': 0.0, 'update_rouge': 0.39898989898989895},
        ],
    },
    'editeval_gleu_main': {
        # EditEval's own update_rouge (bootstrap median), numpy seeds 0-4: 0.25, 0.25, 0.25, 0.25, 0.25
        'corpus': {'sari': 30.035587982576388, 'gleu': 0.6414695977421934, 'ibleu': 0.7126322458157023, 'exact_match': 0.5, 'em_diff': 0.0, 'update_rouge': 0.25},
        'examples': [
            {'sari': 22.36400295610822, 'gleu': 0.0, 'ibleu': 0.322322305769504, 'exact_match': 0.0, 'em_diff': 0.0, 'update_rouge': 0.0},
            {'sari': 31.553276644404708, 'gleu': 0.8027096427560556, 'ibleu': 0.8, 'exact_match': 1.0, 'em_diff': 0.0, 'update_rouge': 0.5},
            {'sari': 31.71226316491663, 'gleu': 0.8256089499045108, 'ibleu': 0.8, 'exact_match': 1.0, 'em_diff': 0.0, 'update_rouge': 0.5},
            {'sari': 25.695611577964524, 'gleu': 0.21225827554626348, 'ibleu': 0.44094733569750766, 'exact_match': 0.0, 'em_diff': 0.0, 'update_rouge': 0.0},
        ],
    },
    'editeval_ibleu_fixture': {
        # EditEval's own update_rouge (bootstrap median), numpy seeds 0-4: 1.0, 1.0, 1.0, 1.0, 1.0
        'corpus': {'sari': 33.333333333333336, 'gleu': 1.0, 'ibleu': 0.8, 'exact_match': 1.0, 'em_diff': 0.0, 'update_rouge': 1.0},
        'examples': [
            {'sari': 33.333333333333336, 'gleu': 1.0, 'ibleu': 0.8, 'exact_match': 1.0, 'em_diff': 0.0, 'update_rouge': 1.0},
        ],
    },
}
# fmt: on
