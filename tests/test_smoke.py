from checker.cli import main


def test_counter_model_loses_an_update(tmp_path, capsys):
    spec = tmp_path / "c.spec"
    spec.write_text("model c; var x: 0..2 = 0; process p[2] { var r: 0..2 = 0; r = x; x = r + 1; }\n"
                    "invariant i: (p[0]@end && p[1]@end) -> x == 2;\n")
    assert main([str(spec), "--brief"]) == 1
    assert "violated" in capsys.readouterr().out
