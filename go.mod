module kvq

go 1.26
